import type {
  AwaitedResults,
  HolderNote,
  Lease,
  Loaded,
  RecordFirst,
} from '@baton/runtime/internal';
import type { WorkerDeps } from './worker-deps.ts';

/**
 * Releases the run's lease; if another job asked for the run while it was held (its pending
 * mark), schedules a fresh pass so that request is not lost, unless `needsPass` says the run as
 * it is now is carried on by others. Safe to call twice.
 */
export async function releaseOrWake(
  deps: Pick<WorkerDeps, 'leases' | 'queues'>,
  lease: Lease,
  needsPass: (current: Loaded) => boolean = () => true,
): Promise<void> {
  const current = await deps.leases.releaseDecoded(lease);
  if (current && needsPass(current))
    await deps.queues.enqueueStep(current.checkpoint.identity, 'continue', current.version, true);
}

/**
 * Takes the run's lease and reads its checkpoint (and the results recorded for its running
 * calls) in one round trip; `acquired` is null when another job holds it (our pending mark is
 * left for the holder). `record`: a tool result recorded first, in the same round trip; `note`:
 * the job attempt's holder note, likewise (StallAccounting.admit). A
 * checkpoint that cannot be decoded releases the lease before the error goes up.
 */
export async function leaseAndLoad(
  deps: Pick<WorkerDeps, 'queues' | 'leases' | 'messages'>,
  runId: string,
  driver: string,
  record?: RecordFirst,
  note?: HolderNote | null,
): Promise<{
  acquired: { lease: Lease; state: Loaded | null; awaited: AwaitedResults | null } | null;
  onRecord: string | null;
  deferred: boolean;
}> {
  const { acquired, onRecord, deferred } = await deps.leases.acquireDecoded(runId, {
    driver,
    record,
    messages: deps.messages,
    note: note ?? undefined,
  });
  if (!acquired) return { acquired: null, onRecord, deferred };
  if ('failed' in acquired) {
    await releaseOrWake(deps, acquired.lease);
    throw acquired.failed;
  }
  return { acquired, onRecord, deferred };
}
