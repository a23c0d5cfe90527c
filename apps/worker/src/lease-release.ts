import type { Lease } from '@baton/runtime';
import type { WorkerDeps } from './worker-deps.ts';

/**
 * Releases the run's lease; if another job asked for the run while it was held (its pending
 * mark), schedules a fresh pass so that request is not lost. Safe to call twice.
 */
export async function releaseOrWake(
  deps: Pick<WorkerDeps, 'store' | 'queues'>,
  lease: Lease,
): Promise<void> {
  if (!(await lease.release())) return;
  const current = await deps.store.load(lease.runId);
  if (current)
    await deps.queues.enqueueStep(current.checkpoint.identity, 'continue', current.version, true);
}
