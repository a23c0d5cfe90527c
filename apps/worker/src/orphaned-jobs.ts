import { Job, type Queue, type Worker } from 'bullmq';
import type { RedisClient } from '@baton/runtime';
import { activeJobsKey, isWorkerLockToken, readJobLock } from '@baton/runtime/internal';

/** A lock set this recently may belong to a fetch whose reply is still on its way. */
const FRESH_LOCK_MS = 2_000;

/**
 * Jobs a Worker took from its queue whose reply was lost: when a master dies right after
 * running BullMQ's `moveToActive` (or a `moveToFinished` that also fetched the next job) and its
 * replica got the write, the command is sent again to the promoted replica (taking another job,
 * or failing with "Missing lock"), and the job it took stays active under this Worker's lock,
 * which nobody renews. BullMQ takes it over as a stalled job only once that lock
 * expires (JOB_LOCK_MS) and a stall check sees it: its run would stand still 15–30 s after the
 * cluster is back (ioredis sends a command again after a lost connection, scripts included).
 *
 * Called when the Worker's blocking connection is back after losing its master: an active job
 * locked by this Worker (its lock token starts with the Worker's id) that it has not seen
 * (`seen`: every job it fetched and has not finished) and whose lock is not fresh goes back to
 * wait now. Returns how many did.
 */
export async function releaseOrphanedJobs(opts: {
  readonly redis: RedisClient;
  readonly worker: Worker;
  readonly queue: Queue;
  readonly seen: ReadonlySet<string>;
  readonly lockMs: number;
}): Promise<number> {
  const { redis, worker, queue, seen, lockMs } = opts;
  let released = 0;
  for (const id of await redis.lrange(activeJobsKey(queue), 0, -1)) {
    if (seen.has(id)) continue;
    const lock = await readJobLock(redis, queue, id);
    if (lock === null || !isWorkerLockToken(lock.token, worker.id)) continue;
    if (lock.ttlMs > lockMs - FRESH_LOCK_MS) continue;
    // The fetch that took it may have ended since: only a job still unseen is released.
    if (seen.has(id)) continue;
    const job = await Job.fromId(queue, id);
    // Refused (a negative code) when the lock changed meanwhile: then it was not an orphan.
    if (job && (await job.moveToWait(lock.token).catch(() => -1)) >= 0) released += 1;
  }
  return released;
}
