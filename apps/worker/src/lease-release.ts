import type { AwaitedResults, Lease, Loaded, RecordFirst } from '@baton/runtime';
import type { WorkerDeps } from './worker-deps.ts';

/**
 * Releases the run's lease; if another job asked for the run while it was held (its pending
 * mark), schedules a fresh pass so that request is not lost, unless `needsPass` says the run as
 * it is now is carried on by others. Safe to call twice.
 */
export async function releaseOrWake(
  deps: Pick<WorkerDeps, 'store' | 'queues'>,
  lease: Lease,
  needsPass: (current: Loaded) => boolean = () => true,
): Promise<void> {
  const asked = await lease.releaseAndRead();
  if (!asked) return;
  const current = deps.store.decodeStored(lease.runId, asked.data, asked.version, asked.messages);
  if (current && needsPass(current))
    await deps.queues.enqueueStep(current.checkpoint.identity, 'continue', current.version, true);
}

/**
 * Takes the run's lease and reads its checkpoint (and the results recorded for its running
 * calls) in one round trip; `acquired` is null when another job holds it (our pending mark is
 * left for the holder). `record`: a tool result recorded first, in the same round trip. A
 * checkpoint that cannot be decoded releases the lease before the error goes up.
 */
export async function leaseAndLoad(
  deps: Pick<WorkerDeps, 'store' | 'queues' | 'leases' | 'messages'>,
  runId: string,
  driver: string,
  record?: RecordFirst,
): Promise<{
  acquired: { lease: Lease; state: Loaded | null; awaited: AwaitedResults | null } | null;
  onRecord: string | null;
  deferred: boolean;
}> {
  const kept = deps.messages?.known(runId);
  const { acquired, onRecord, deferred } = await deps.leases.acquireAndLoad(
    runId,
    driver,
    record,
    kept,
  );
  if (!acquired) return { acquired: null, onRecord, deferred };
  const { lease } = acquired;
  try {
    // The prefix was kept before the connection dropped (Redis may be back from an older past):
    // read the run whole, as it is now (the lease is ours, so it is consistent).
    const read =
      kept && deps.messages?.outdated(kept) && acquired.messagesFrom > 0
        ? { ...(await deps.store.readStored(runId)), messagesFrom: 0 }
        : acquired;
    const state = deps.store.decodeStored(
      runId,
      read.data,
      read.version,
      deps.messages
        ? {
            parsed: deps.messages.resolve(
              runId,
              kept,
              read.messagesName,
              read.messagesFrom,
              read.messages,
            ),
          }
        : read.messages,
    );
    return { acquired: { lease, state, awaited: acquired.awaited }, onRecord, deferred };
  } catch (error) {
    deps.messages?.forget(runId);
    await releaseOrWake(deps, lease);
    throw error;
  }
}
