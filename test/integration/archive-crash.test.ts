/**
 * The archiver loses and duplicates nothing when its worker dies mid-batch (kill -9 after the
 * batch is in PostgreSQL, before Redis was told) and when PostgreSQL restarts while runs keep
 * finishing: afterwards every finished run is in the archive exactly once, with every event it
 * has in Redis, and nothing is left pending. PostgreSQL here is a private server (initdb'd by
 * the test), so its restart touches no other test.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import { PgArchive } from '@baton/runtime/internal';
import {
  createTestDatabase,
  startPrivatePostgres,
  type PrivatePostgres,
  type TestDatabase,
} from '@baton/testing/postgres';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const TENANT = 't-archive-crash';
let server: PrivatePostgres;
let db: TestDatabase;

beforeAll(async () => {
  server = await startPrivatePostgres();
  db = await createTestDatabase('archive_crash', server.url);
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await db?.drop().catch(() => undefined);
  await server?.destroy();
});

describe('archiver crashes (faults)', () => {
  it('kill -9 mid-batch and a PostgreSQL restart mid-stream: every run archived once, complete', async () => {
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    const env = { ARCHIVE_URL: db.url, ARCHIVE_BATCH: '5', ARCHIVE_INTERVAL_MS: '50' };
    const client = new BatonRuntime({
      config: testConfig(redisUrl, prefix, env),
      logger: silentLogger,
    });
    const runIds: string[] = [];
    const create = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i += 1) {
        const { runId } = await client.service.createRun(TENANT, {
          agent: 'assistant',
          input: { messages: [{ role: 'user', content: `run ${String(runIds.length)}` }] },
        });
        runIds.push(runId);
      }
    };
    try {
      // 1. The archiving worker stops right after its first batch is committed in PostgreSQL.
      const first = await spawnWorker({
        redisUrl,
        prefix,
        env,
        pause: { 'archive-written': 120_000 },
      });
      await create(20);
      await first.onProbe('archive-written', undefined, 60_000);
      first.kill('SIGKILL');
      await first.waitForExit(10_000);
      expect((await client.archiver!.lag()).pending).toBeGreaterThan(0);

      // 2. Another worker takes over (the dead one's lock lapses) while PostgreSQL goes away and
      //    comes back; runs keep finishing meanwhile.
      const second = await spawnWorker({ redisUrl, prefix, env: { ...env, LOG_LEVEL: 'warn' } });
      await create(10);
      await server.stop();
      await create(10);
      await waitFor(
        async () => {
          const metas = await Promise.all(runIds.map((id) => client.store.meta(id)));
          return metas.every((m) => m?.status === 'done');
        },
        60_000,
        'every run finished',
      );
      // Those that finished while PostgreSQL was away wait for it, kept in Redis.
      expect((await client.archiver!.lag()).pending).toBeGreaterThan(0);
      await server.start();
      await create(5);
      await waitFor(
        async () => {
          const metas = await Promise.all(runIds.map((id) => client.store.meta(id)));
          return (
            metas.every((m) => m?.status === 'done') && (await client.archiver!.lag()).pending === 0
          );
        },
        120_000,
        'the archive caught up',
      );
      expect(second.isAlive()).toBe(true);

      // 3. Exactly once, complete: the archive's rows are Redis's runs and events.
      const archive = client.archive as PgArchive;
      expect(await archive.holds(runIds)).toEqual(new Set(runIds));
      let total = 0;
      for (const runId of runIds) {
        const redisEvents = await client.store.readEvents(runId);
        const archived = await archive.readEvents(TENANT, runId);
        expect(archived).toEqual(redisEvents);
        expect(archived?.map((e) => e.seq)).toEqual(redisEvents.map((_, i) => i + 1));
        total += redisEvents.length;
      }
      // Rows of this database: exactly these runs and their events, nothing twice.
      const usage = await archive.usage();
      expect(usage.runs).toBe(runIds.length);
      expect(usage.events).toBe(total);
      // Archived runs' keys now expire with EVENT_RETENTION_SECONDS (no longer the hold).
      const ttl = await client.redis.ttl(client.keys.run(runIds[0]!).cp);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(client.config.EVENT_RETENTION_SECONDS);
    } finally {
      await client.close();
    }
  }, 300_000);
});
