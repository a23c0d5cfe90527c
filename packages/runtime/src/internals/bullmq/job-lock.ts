import type { RedisClient } from '../../redis/scripts.ts';
import type { KeyedQueue } from './queue-keys.ts';

/*
 * BullMQ's job locks, as of bullmq 6.7 (package.json pins ~6.7.0): the lock of job `id` is the
 * string key `<job hash key>:lock`, holding the token the fetching Worker passed to
 * moveToActive, with the lock duration as its TTL; a Worker's own fetch loop makes its tokens
 * `<worker id>:<counter>`. Needed to find jobs a Worker took but never saw (its fetch reply lost
 * in a failover: orphaned-jobs.ts), which BullMQ only finds once their lock expires.
 * bullmq-contract.test.ts checks both on a real Worker.
 */

/** The lock key of job `jobId` of `queue`. */
export function jobLockKey(queue: KeyedQueue, jobId: string): string {
  return `${queue.toKey(jobId)}:lock`;
}

/** Whether `token` is one a Worker with id `workerId` locked a job with (its fetch loop's). */
export function isWorkerLockToken(token: string, workerId: string): boolean {
  return token.startsWith(`${workerId}:`);
}

/** The token locking job `jobId` and how long the lock has left (ms); null when unlocked. */
export async function readJobLock(
  redis: RedisClient,
  queue: KeyedQueue,
  jobId: string,
): Promise<{ readonly token: string; readonly ttlMs: number } | null> {
  const key = jobLockKey(queue, jobId);
  const token = await redis.get(key);
  if (token === null) return null;
  return { token, ttlMs: await redis.pttl(key) };
}
