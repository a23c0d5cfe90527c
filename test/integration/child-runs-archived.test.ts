/**
 * A child run that finished and was archived, then let go by Redis, is not created again when its
 * parent's pass still has to apply its result (issue 32, item 13): its existence is checked in the
 * archive too, and its archived result becomes the call's. (It used to be created again under the
 * same id: a second execution, and reads of the id flipping between the two copies.)
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { childAgents } from '@baton/core/testing';
import { BatonRuntime } from '@baton/runtime';
import { BatonWorker } from '@baton/worker';
import { createTestDatabase, type TestDatabase } from '@baton/testing/postgres';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';

const TENANT = 't-child-archived';
let db: TestDatabase;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  db = await createTestDatabase('child_archived');
});

afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await db?.drop();
});

describe('archived child runs', () => {
  it('a finished child only the archive still has gives its result; it is not created again', async () => {
    const config = testConfig(inject('redisUrl'), testPrefix(), {
      ARCHIVE_URL: db.url,
      ARCHIVE_INTERVAL_MS: '50',
      EVENT_RETENTION_SECONDS: '1',
      THREAD_TTL_SECONDS: '1',
      RECONCILE_INTERVAL_MS: '300',
    });
    const client = new BatonRuntime({ config, logger: silentLogger });
    stops.push(() => client.close());
    let parentId = '';
    const outcomes: string[] = [];
    let childId = '';
    let started!: () => void;
    const childStarted = new Promise<void>((resolve) => (started = resolve));
    let released!: () => void;
    const release = new Promise<void>((resolve) => (released = resolve));
    const worker = new BatonWorker({
      config,
      agents: childAgents(),
      logger: silentLogger,
      // The parent's pass that created the child holds the parent (its lease) until the test
      // says so: meanwhile the child runs, ends, is archived and leaves Redis.
      probe: async (point, info) => {
        if (point !== 'after-child-start' || info['runId'] !== parentId) return;
        outcomes.push(String(info['outcome']));
        if (outcomes.length > 1) return;
        childId = String(info['childRunId']);
        started();
        await release;
      },
    });
    await worker.start();
    stops.push(() => worker.stop(500));
    const created = await client.service.createRun(TENANT, {
      agent: 'tree-stream',
      input: { messages: [{ role: 'user', content: 'call answer' }] },
    });
    parentId = created.runId;
    await childStarted;
    await waitFor(
      async () =>
        (await client.archive?.loadRun(TENANT, childId)) && !(await client.store.meta(childId)),
      30_000,
      `child ${childId} archived and gone from Redis`,
    );
    // Its result never reached the parent's mailbox for good: a delivery lost with its worker,
    // or a mailbox an earlier release let expire.
    await client.redis.del(client.keys.run(parentId).results);
    released();
    const done = await waitFor(
      async () => {
        const stored = await client.store.load(parentId);
        return stored?.checkpoint.status === 'done' ? stored.checkpoint : null;
      },
      30_000,
      `parent ${parentId} to finish`,
    );
    expect(done.termination).toEqual({ kind: 'natural_end' });
    const answers = done.messages.flatMap((m) => (m.role === 'tool' ? [m.content] : []));
    expect(JSON.stringify(answers)).toContain('answered');
    // Created once; the next pass found it in the archive.
    expect(outcomes).toEqual(['created', 'finished']);
    expect(await client.store.meta(childId)).toBeNull();
  }, 90_000);
});
