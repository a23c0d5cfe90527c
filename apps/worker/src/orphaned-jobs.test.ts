import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { releaseOrphanedJobs } from './orphaned-jobs.ts';

const LOCK_MS = 10_000;
const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
const prefix = `orphans-${randomUUID().slice(0, 8)}`;
const queue = new Queue('orphans', { connection: redis, prefix });
/** Two Workers that fetch by hand (no processor loop): one is "this" worker, one another. */
const mine = new Worker('orphans', null, { connection: redis, prefix, lockDuration: LOCK_MS });
const theirs = new Worker('orphans', null, { connection: redis, prefix, lockDuration: LOCK_MS });

afterAll(async () => {
  await Promise.all([mine.close(), theirs.close(), queue.close()]);
  redis.disconnect();
});

/** The job `worker` fetched, its lock made as old as a failover makes it. */
async function fetched(worker: Worker, token: string, ageMs = 4_000): Promise<string> {
  const job = await worker.getNextJob(token);
  if (!job?.id) throw new Error('no job fetched');
  await redis.pexpire(`${queue.toKey(job.id)}:lock`, LOCK_MS - ageMs);
  return job.id;
}

describe('releaseOrphanedJobs', () => {
  it("puts back only this Worker's unseen jobs with an old lock", async () => {
    await queue.addBulk(['a', 'b', 'c', 'd'].map((name) => ({ name, data: {} })));
    const orphan = await fetched(mine, `${mine.id}:1`);
    const working = await fetched(mine, `${mine.id}:2`);
    const fresh = await fetched(mine, `${mine.id}:3`, 0);
    const another = await fetched(theirs, `${theirs.id}:1`);

    const released = await releaseOrphanedJobs({
      redis,
      worker: mine,
      queue,
      seen: new Set([working]),
      lockMs: LOCK_MS,
    });

    expect(released).toBe(1);
    expect(await queue.getJobState(orphan)).toBe('waiting');
    // Being worked on, just fetched (its reply may be on its way), or another worker's: kept.
    for (const id of [working, fresh, another]) expect(await queue.getJobState(id)).toBe('active');
  });
});
