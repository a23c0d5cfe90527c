import type { Lease, Loaded } from '@baton/runtime';
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

/**
 * Takes the run's lease and reads its checkpoint in one round trip; null when another job holds
 * it (our pending mark is left for the holder). A checkpoint that cannot be decoded releases the
 * lease before the error goes up.
 */
export async function leaseAndLoad(
  deps: Pick<WorkerDeps, 'store' | 'queues' | 'leases'>,
  runId: string,
  driver: string,
): Promise<{ lease: Lease; state: Loaded | null } | null> {
  const acquired = await deps.leases.acquireAndLoad(runId, driver);
  if (!acquired) return null;
  const { lease } = acquired;
  try {
    const state = deps.store.decodeStored(
      runId,
      acquired.data,
      acquired.version,
      acquired.messages,
    );
    return { lease, state };
  } catch (error) {
    await releaseOrWake(deps, lease);
    throw error;
  }
}
