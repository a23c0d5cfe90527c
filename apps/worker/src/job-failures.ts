import { runCommands } from '@baton/core';
import type { Job } from 'bullmq';
import { STALLED_TOO_OFTEN } from '@baton/runtime/internal';
import { deathsOf } from './stall-accounting.ts';
import type { WorkerDeps } from './worker-deps.ts';

/**
 * A job failed for good (its retries are used up, or its worker kept dying). What that means:
 * - The failure is remembered with the run, and the job is removed once the run has finished:
 *   a finished run leaves no failed jobs behind (while it lives, Bull Board shows them). A worker
 *   that dies before it gets here leaves that to the reconciler (keepFailedJob).
 * - A step job whose worker died more than MAX_STALLS times may only have shared a worker
 *   with what killed it (a tool job of its round, say), so the first time the run is simply
 *   given a fresh pass by the reconciler. When a second step job of the same step is given up
 *   the same way, the step itself is what kills workers: the run ends with an error that says
 *   so, instead of taking down worker after worker. (A tool job's failure becomes its call's
 *   result when the round's parent job goes on: see fan-out.ts.)
 * - Any other failed step job leaves the run to the reconciler, which schedules a fresh pass.
 */
export async function onJobFailed(
  deps: WorkerDeps,
  queue: string,
  job: Job,
  error: Error,
): Promise<void> {
  if ((await job.getState()) !== 'failed') return; // another attempt is scheduled
  const runId = (job.data as { runId?: unknown }).runId;
  if (typeof runId !== 'string' || job.id === undefined) return;
  const log = deps.logger.child({ runId, jobId: job.id, queue });
  log.warn({ err: error, reason: job.failedReason, stalls: job.stalledCounter }, 'job failed');
  await deps.probe?.('before-failed-job-record', { runId, queue, jobId: job.id });
  if (!(await keepFailedJob(deps, queue, job.id, runId))) return;
  const kind = (job.data as { kind?: unknown }).kind;
  if (kind !== 'step' || job.failedReason !== STALLED_TOO_OFTEN) return;
  const step = (await deps.store.load(runId))?.checkpoint.step ?? 0;
  const died = await deathsOf(deps.redis, job);
  // Counted on the run's own hash, so the counts expire with the run.
  const { givenUp, deaths } = await deps.store.bookkeeping.countStepLoss(
    runId,
    step,
    Math.max(1, died),
  );
  if (givenUp < 2) {
    log.warn({ step }, 'step job given up after losing its worker; the reconciler tries once more');
    return;
  }
  const lease = await deps.leases.acquire(runId);
  if (!lease) return; // someone is driving the run right now: it is not stuck on this job
  try {
    const loaded = await deps.committer.load(runId);
    if (!loaded || loaded.checkpoint.status === 'done') return;
    const message =
      `step ${String(loaded.checkpoint.step)} of this run stopped its worker ` +
      `${String(deaths)} times (crash, out of memory, kill, or a hang past AGENT_HEARTBEAT_TTL_MS); ` +
      'the run was ended so that it cannot take down more workers';
    const engine = deps.registry.engine(loaded.checkpoint.identity.agent);
    const now = deps.clock.now();
    const t = engine
      ? engine.fail(loaded.checkpoint, message, now)
      : runCommands.fail(loaded.checkpoint, message, now);
    await deps.committer.commitFenced(loaded, t, { lease, registry: engine?.ctx.registry });
    log.error({ step: loaded.checkpoint.step }, 'run ended: its step kept killing workers');
  } finally {
    await lease.release();
  }
}

/**
 * Remembers a failed job with its run, or removes it when the run has finished (or is gone): a
 * finished run leaves no failed job behind. False when the job was removed. Idempotent: the
 * `failed` handler calls it, and the reconciler for every failed job, since a worker can die
 * between failing a job and this call.
 */
export async function keepFailedJob(
  deps: Pick<WorkerDeps, 'store' | 'redis' | 'keys' | 'queues'>,
  queue: string,
  jobId: string,
  runId: string,
): Promise<boolean> {
  const entry = `${queue}:${jobId}`;
  const meta = await deps.store.meta(runId);
  if (!meta || meta.status === 'done') {
    await deps.queues.removeFailedJobs([entry]);
    return false;
  }
  await deps.store.bookkeeping.rememberFailedJob(runId, entry);
  // The run may have finished between the two reads (its clean-up saw no entry yet).
  if ((await deps.store.meta(runId))?.status === 'done') {
    await deps.queues.removeFailedJobs([entry]);
    return false;
  }
  return true;
}
