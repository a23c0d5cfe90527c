/**
 * Job options of the raw BullMQ baselines (raw-bullmq-chains.ts, the HTTP floor's worker): the
 * same as Baton's step jobs (explicit ids, retries, retention of completed jobs). No Baton
 * import, so a baseline child process loads none of Baton's code.
 */
import type { JobsOptions } from 'bullmq';

export function rawJobOptions(jobId: string, priority?: number): JobsOptions {
  return {
    jobId,
    attempts: 8,
    backoff: { type: 'exponential', delay: 100 },
    removeOnComplete: { age: 3600, count: 50_000 },
    removeOnFail: { age: 7 * 86_400 },
    ...(priority === undefined ? {} : { priority }),
  };
}
