import { BatonError } from '@baton/core';
import type { Checkpoint } from '@baton/protocol';
import { RunIndex, expiringMember } from './run-record/run-index.ts';
import { RunNotFoundError } from './errors/run-not-found-error.ts';
import { ThreadNotFoundError } from './errors/thread-not-found-error.ts';
import type { RunParts } from './run-service-deps.ts';

function threadBusy(threadId: string, runId: string): BatonError {
  return new BatonError(
    'thread_busy',
    `thread ${threadId} has an active or queued run (${runId}); cancel it and delete the thread once it is done`,
    { threadId, activeRunId: runId },
  );
}

/** RunService's deletes: a finished run, a thread and its runs, from Redis and the archive. */
export class RunDeletion {
  private readonly p: RunParts;

  constructor(parts: RunParts) {
    this.p = parts;
  }

  /**
   * Deletes a finished run, and what it added to its thread: its messages leave the thread's
   * history, and a thread left with no run is deleted whole, so a later run on the same threadId
   * neither shows nor gives the model anything of it (409 run_active for a run that has not
   * finished: cancel it first).
   */
  async deleteRun(tenantId: string, runId: string): Promise<void> {
    const found = await this.p.reads.loadFrom(tenantId, runId);
    if (!found) throw new RunNotFoundError(runId);
    const { loaded, hot } = found;
    if (loaded.checkpoint.status !== 'done')
      throw new BatonError(
        'run_active',
        `run ${runId} has not finished; cancel it (POST /v1/runs/${runId}/cancel) and delete it once it is done`,
        { runId },
      );
    // The archive first (its tombstone also stops an archiver holding the run in memory): a
    // crash after it leaves the Redis copy for a retried DELETE, never an archived run that
    // a later read or a rehydrated thread would bring back.
    await this.p.reads.cold.deleteRun(loaded.checkpoint);
    if (hot) await this.purgeRun(loaded.checkpoint);
    else await this.purgeArchivedRun(loaded.checkpoint);
    await this.p.deps.durability.acknowledge();
  }

  /**
   * What Redis may still hold of a run only the archive had: its messages in a thread Redis
   * still has, its index entries. Not released again: its release is long done, and a thread
   * rehydrated since would take its messages a second time.
   */
  private async purgeArchivedRun(cp: Checkpoint): Promise<void> {
    const { tenantId, threadId, runId } = cp.identity;
    const own = cp.messages.slice(cp.historyLength).map((m) => m.id);
    await this.p.deps.threads.forgetRun(tenantId, threadId, runId, own);
    await this.p.deps.store.dropFromIndexes(tenantId, threadId, runId);
    await new RunIndex(this.p.deps.redis, this.p.deps.keys).forgetExpiring(expiringMember(cp));
    await this.p.deps.webhooks?.forget(runId);
  }

  /**
   * The thread first, then what else holds the run, the run's own keys last: an error anywhere
   * leaves the run, so a retried DELETE finds it and finishes the job (each step is idempotent);
   * never a run that is gone while its messages, its webhooks or its index entries stay.
   */
  private async purgeRun(cp: Checkpoint): Promise<void> {
    const { tenantId, threadId, runId } = cp.identity;
    const own = cp.messages.slice(cp.historyLength).map((m) => m.id);
    // Released first (idempotent), so a release still to come cannot append them afterwards.
    await this.p.deps.committer.releaseThread(cp);
    const forgotten = await this.p.deps.threads.forgetRun(tenantId, threadId, runId, own);
    if (forgotten.kind === 'active')
      throw new BatonError('conflict', `run ${runId} still holds its thread; retry the delete`, {
        runId,
      });
    await this.forgetFinished(cp);
    await this.p.deps.store.deleteRun(runId, tenantId);
  }

  /** What holds a finished run besides its keys and its thread (idempotent). */
  private async forgetFinished(cp: Checkpoint): Promise<void> {
    await new RunIndex(this.p.deps.redis, this.p.deps.keys).forgetExpiring(expiringMember(cp));
    await this.p.deps.webhooks?.forget(cp.identity.runId);
  }

  /**
   * Deletes a thread and its (finished) runs. Refused with 409 thread_busy while a run is active
   * or queued on it. The runs go first, the thread last: an error in between leaves the thread
   * with the runs not deleted yet, and a retried DELETE deletes them (a thread deleted first left
   * them listed for good: the retry found no thread).
   */
  async deleteThread(tenantId: string, threadId: string): Promise<{ runs: number }> {
    // Only who holds the thread and its run ids: no message is read (before 0).
    const hot = await this.p.deps.threads.page(tenantId, threadId, {
      before: 0,
      limit: 0,
      maxBytes: 0,
    });
    const busy = hot.activeRunId ?? hot.queued[0];
    if (busy !== undefined) throw threadBusy(threadId, busy);
    // The archive first (as deleteRun); its tombstones also stop an archiver holding them.
    await this.p.reads.cold.forgetRuns(tenantId, hot.runIds);
    const archivedRuns = await this.p.reads.cold.deleteThread(tenantId, threadId);
    for (const runId of hot.runIds) await this.deleteThreadRun(tenantId, threadId, runId);
    const outcome = await this.p.deps.threads.delete(tenantId, threadId);
    if (outcome.kind === 'busy') throw threadBusy(threadId, outcome.runId);
    // Runs that joined (and finished) since the thread was read.
    const late =
      outcome.kind === 'deleted' ? outcome.runIds.filter((id) => !hot.runIds.includes(id)) : [];
    await this.p.reads.cold.forgetRuns(tenantId, late);
    for (const runId of late) await this.deleteThreadRun(tenantId, threadId, runId);
    const runs = new Set([...hot.runIds, ...late, ...archivedRuns]).size;
    if (outcome.kind === 'missing' && runs === 0) throw new ThreadNotFoundError(threadId);
    await this.p.deps.durability.acknowledge();
    return { runs };
  }

  /** One finished run of a thread being deleted: 409 thread_busy for one that has not finished. */
  private async deleteThreadRun(tenantId: string, threadId: string, runId: string): Promise<void> {
    const loaded = await this.p.deps.store.loadForTenant(runId, tenantId);
    if (loaded) await this.forgetFinished(loaded.checkpoint);
    else await this.p.deps.webhooks?.forget(runId);
    const outcome = await this.p.deps.store.deleteRun(runId, tenantId);
    if (outcome === 'active') throw threadBusy(threadId, runId);
  }
}
