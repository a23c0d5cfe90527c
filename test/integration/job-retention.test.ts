/**
 * Finished BullMQ jobs after a burst: BullMQ removes old finished jobs only when another job of
 * the queue finishes, and then a bounded number, so once a burst is over nothing but the
 * reconciler removes them. One reconciler scan after JOB_RETENTION_SECONDS must remove every one
 * of them, not a batch per scan (19,024 job keys took ≈ 48 minutes at 200 per 30 s scan).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';

const TENANT = 't-jobs';
let h: Harness;

beforeAll(async () => {
  h = await startHarness(inject('redisUrl'), createDemoAgents(systemClock), {
    workers: 1,
    overrides: {
      JOB_RETENTION_SECONDS: '1',
      // The test runs the scan itself; a small batch is what bounded the clean-up per scan.
      RECONCILE_INTERVAL_MS: '3600000',
      RECONCILE_BATCH: '10',
    },
  });
});

afterAll(async () => {
  await h.stop();
});

/** BullMQ job hashes of this test's queues (`{p-bull}:<queue>:<jobId>`, not the queue's own keys). */
async function jobKeys(): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await h.client.redis.scan(
      cursor,
      'MATCH',
      // Shard queues (`p-bull:<queue>{tag}:…`) and the earlier layouts' (`{p-bull}:…`).
      `*${h.prefix}-bull*`,
      'COUNT',
      1000,
    );
    cursor = next;
    out.push(...keys.filter((k) => /^[^:]+:[^:]+:(step|wake|tool)\.[^:]+$/.test(k)));
  } while (cursor !== '0');
  return out;
}

describe('finished jobs after a burst', () => {
  it('one reconciler scan after the retention removes every finished job, whatever the batch', async () => {
    const svc = h.client.service;
    const created = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        svc.createRun(TENANT, {
          agent: i % 2 === 0 ? 'assistant' : 'parallel-assistant',
          input: { messages: [{ role: 'user', content: `weather in city ${i}?` }] },
        }),
      ),
    );
    for (const { runId } of created) await waitForStatus(h, runId, ['done'], 60_000);
    const queues = await h.client.queues.listQueues(['assistant', 'parallel-assistant']);
    const finished = async (): Promise<number> => {
      let n = 0;
      for (const q of queues) n += await q.getJobCountByTypes('completed', 'failed');
      return n;
    };
    // Every job has finished (the last step job completes just after the commit that ends its run).
    await waitFor(
      async () => {
        for (const q of queues) if ((await q.getJobCountByTypes('active', 'wait')) > 0) return null;
        return true;
      },
      30_000,
      'the burst to leave no live job',
    );
    const before = await finished();
    // Far more than one batch: the scan used to remove only RECONCILE_BATCH per queue and state.
    expect(before).toBeGreaterThan(40);
    expect((await jobKeys()).length).toBeGreaterThanOrEqual(before);
    // Past the retention of the last one to finish.
    let lastFinished = 0;
    for (const q of queues)
      for (const job of await q.getJobs(['completed', 'failed']))
        lastFinished = Math.max(lastFinished, job.finishedOn ?? 0);
    await waitFor(
      async () => Date.now() > lastFinished + 1_500,
      10_000,
      'the job retention to pass',
    );

    const report = await h.workers[0]!.reconcile();
    expect(report?.cleanedJobs).toBeGreaterThanOrEqual(before);
    expect(await finished()).toBe(0);
    expect(await jobKeys()).toEqual([]);
  });
});
