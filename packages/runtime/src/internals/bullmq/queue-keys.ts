import type { Job } from 'bullmq';
import type { RedisClient } from '../../redis/scripts.ts';

/*
 * BullMQ's key layout, as Baton reads and writes it beside BullMQ's own scripts. Relied on as of
 * bullmq 6.7 (package.json pins ~6.7.0): every key of a queue is `<prefix>:<queue>:<type>`
 * (QueueKeys.toKey), a job's hash is `<prefix>:<queue>:<job id>`, pending jobs sit in the
 * lists and sorted sets named in PENDING_STATES, failed jobs in the `failed` sorted set scored by
 * their finish time, and a blocked Worker wakes when the `marker` sorted set gets a member.
 * None of this is BullMQ's published API; bullmq-contract.test.ts checks each on a real queue.
 */

/** What these functions need of a BullMQ Queue or Worker: its key builder. */
export interface KeyedQueue {
  readonly toKey: (type: string) => string;
}

/**
 * The lists and sets of a BullMQ queue that hold jobs still to be done. Needed to tell with one
 * multi-key EXISTS whether a queue of an earlier layout still holds work (queue-drain.ts): BullMQ
 * offers only per-state counts, several round trips per queue.
 */
export const PENDING_STATES = [
  'wait',
  'paused',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
] as const;

/** The keys of `queue`'s pending states (PENDING_STATES), for one EXISTS over all of them. */
export function pendingJobKeys(queue: KeyedQueue): string[] {
  return PENDING_STATES.map((state) => queue.toKey(state));
}

/**
 * A key of `queue` that hashes to the slot of every key of it (BullMQ keeps a queue in one slot
 * through its prefix's hash tag): groups queues by slot on a cluster.
 */
export function queueSlotKey(queue: KeyedQueue): string {
  return queue.toKey('wait');
}

/**
 * The sorted set of `queue`'s failed jobs, scored by the time they failed. The reconciler pages
 * through it by time (a cursor per queue); BullMQ's getFailed pages by rank only.
 */
export function failedJobsKey(queue: KeyedQueue): string {
  return queue.toKey('failed');
}

/** The list of `queue`'s active jobs (orphaned-jobs.ts looks for locks nobody renews). */
export function activeJobsKey(queue: KeyedQueue): string {
  return queue.toKey('active');
}

/**
 * The hash BullMQ keeps job `jobId` of `queue` in: one multi-key EXISTS over several tells
 * whether any of those jobs exists (fan-out.ts), which BullMQ has no call for.
 */
export function jobHashKey(queue: KeyedQueue, jobId: string): string {
  return queue.toKey(jobId);
}

/** The hash of a fetched job (`<prefix>:<queue>` is its queueQualifiedName). */
export function jobHashKeyOf(job: Pick<Job, 'queueQualifiedName' | 'id'>): string {
  return `${job.queueQualifiedName}:${job.id ?? ''}`;
}

/** The sorted set a Worker blocks on (BZPOPMIN) for its queue's next job. */
export function queueMarkerKey(queue: KeyedQueue): string {
  return queue.toKey('marker');
}

/**
 * Sets `queue`'s marker as adding a job does, so Workers blocked on the queue look at it now. BullMQ
 * does not set it when it moves a stalled job back to wait (or after a blocking connection was
 * lost): those jobs would wait for the Workers' next idle poll.
 */
export async function wakeQueue(redis: RedisClient, queue: KeyedQueue): Promise<void> {
  await redis.zadd(queueMarkerKey(queue), 0, '0');
}
