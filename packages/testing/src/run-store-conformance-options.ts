/**
 * What a store hands the RunStore conformance suite (run-store-conformance.ts), and what the
 * suite hands each of its parts: the store's own functions beyond the port, and a fresh store per
 * test on a clock the test moves.
 */
import type { CommitResult, RunStore, StoredCheckpoint } from '@baton/core';
import type { Checkpoint, EventBody, RunEvent } from '@baton/protocol';

export interface RunStoreConformanceOptions<S extends RunStore> {
  /** Names the suite in the report ("RunStore conformance: <name>"). */
  readonly name: string;
  /**
   * A store for one test, sharing nothing with the stores of other tests (a fresh object, a
   * unique key prefix). Every event it appends is stamped with `now()` at the write.
   */
  readonly open: (now: () => number) => S | Promise<S>;
  /** Events of the run with seq > afterSeq, in seq order: how a reader resumes the log. */
  readonly readEvents: (store: S, runId: string, afterSeq?: number) => Promise<readonly RunEvent[]>;
  /** Seq of the run's last event, 0 when it has none or does not exist. */
  readonly lastSeq?: (store: S, runId: string) => Promise<number>;
  /**
   * commit() told the checkpoint it was derived from, so the store may write only what changed
   * (RedisRunStore appends the new messages): what it stores must not depend on it.
   */
  readonly commitOnBase?: (
    store: S,
    runId: string,
    expectedVersion: number,
    checkpoint: Checkpoint,
    events: readonly EventBody[],
    base: Checkpoint,
  ) => Promise<CommitResult>;
  /** Reads that answer null for another tenant's run, as for a missing one (no existence leak). */
  readonly tenantReads?: {
    readonly load: (store: S, runId: string, tenantId: string) => Promise<StoredCheckpoint | null>;
    readonly lastSeq: (store: S, runId: string, tenantId: string) => Promise<number | null>;
  };
  /** Deletes a finished run of the tenant (DELETE /v1/runs/:id). */
  readonly deleteRun?: (
    store: S,
    runId: string,
    tenantId: string,
  ) => Promise<'deleted' | 'not_found' | 'active'>;
  /**
   * Guards beyond the port's promise, which RedisRunStore keeps and MemoryRunStore does not
   * (today): each is a test, reported as skipped for a store that says false.
   */
  readonly guards: {
    /** Every commit to a run that is done is refused (RunDoneError) and changes nothing. */
    readonly finishedRunsTakeNoCommit: boolean;
    /** commit(runId, …) refuses a checkpoint of another run, and changes neither run. */
    readonly checkpointMustNameTheRun: boolean;
    /** Events read back are the reader's own: changing them changes no stored event. */
    readonly eventsReadAreCopies: boolean;
  };
}

/** One test's view of the suite, shared by the files that register its tests. */
export interface ConformanceSuite<S extends RunStore> {
  readonly opts: RunStoreConformanceOptions<S>;
  /** A fresh store whose clock is back at 5,000. */
  readonly open: () => Promise<S>;
  /** Moves the store's clock on, so the next write is stamped later. */
  readonly tick: (ms: number) => void;
  /**
   * The run's checkpoint, version and whole log, to show that a refused write changed none.
   * Cloned: a store that hands out its own objects would otherwise change the "before" too.
   */
  readonly snapshot: (store: S, runId: string) => Promise<unknown>;
}
