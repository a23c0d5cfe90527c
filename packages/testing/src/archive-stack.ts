/**
 * An API cluster (demo agents) with the archive on and Redis retention of 1 s, on a database of
 * its own: what the archive's end-to-end tests read a run through before and after Redis let it
 * go.
 */
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { startApiCluster, type ApiCluster } from './api-harness.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';
import { waitFor } from './worker-harness.ts';

export interface ArchivedStack {
  readonly db: TestDatabase;
  readonly c: ApiCluster;
  /** Waits until Redis holds none of the thread's history nor these runs (the archive has them). */
  forgotten(tenantId: string, threadId: string, runIds?: readonly string[]): Promise<void>;
  stop(): Promise<void>;
}

/** `label` names the test file's database (see createTestDatabase). */
export async function startArchivedStack(label: string, redisUrl: string): Promise<ArchivedStack> {
  const db = await createTestDatabase(label);
  const c = await startApiCluster(redisUrl, createDemoAgents(systemClock), {
    shared: {
      ARCHIVE_URL: db.url,
      ARCHIVE_INTERVAL_MS: '50',
      EVENT_RETENTION_SECONDS: '1',
      THREAD_TTL_SECONDS: '1',
      RECONCILE_INTERVAL_MS: '300',
    },
  }).catch(async (error: unknown) => {
    await db.drop();
    throw error;
  });
  const { redis, keys } = c.h.client;
  return {
    db,
    c,
    forgotten: (tenantId, threadId, runIds = []) =>
      waitFor(
        async () =>
          (await redis.exists(
            keys.thread(tenantId, threadId).messages,
            ...runIds.map((id) => keys.run(id).cp),
          )) === 0,
        30_000,
        `thread ${threadId}${runIds.length > 0 ? ` and runs ${runIds.join(', ')}` : ''} gone from Redis`,
      ).then(() => undefined),
    stop: async () => {
      await c.stop();
      await db.drop();
    },
  };
}
