import type {
  Checkpoint,
  CheckpointTrigger,
  EventBody,
  JsonValue,
  Message,
  RunEvent,
  RunStatus,
} from '@baton/protocol';

/** Time comes through a port so the engine and its tests stay deterministic. */
export interface Clock {
  now(): number;
  /** Resolves after ms, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export interface StoredCheckpoint {
  readonly checkpoint: Checkpoint;
  readonly version: number;
}

export interface CommitResult {
  readonly version: number;
  readonly events: readonly RunEvent[];
}

/**
 * Durable run store. Every commit is compare-and-set on the version, and the events of a commit
 * are appended (and sequenced) atomically with it: a stale writer changes nothing.
 */
export interface RunStore {
  create(checkpoint: Checkpoint, events: readonly EventBody[]): Promise<CommitResult>;
  load(runId: string): Promise<StoredCheckpoint | null>;
  commit(
    runId: string,
    expectedVersion: number,
    checkpoint: Checkpoint,
    events: readonly EventBody[],
    trigger: CheckpointTrigger | null,
  ): Promise<CommitResult>;
}

/** Ephemeral stream events (text deltas) that are sequenced and stored outside a commit. */
export interface EventAppender {
  append(
    runId: string,
    expectedVersion: number,
    events: readonly EventBody[],
  ): Promise<readonly RunEvent[]>;
}

/** A finished run as the archive keeps it: what every read of a run is answered from. */
export interface ArchivedRun {
  /** The final checkpoint (status 'done'): identity, termination, timestamps, messages. */
  readonly checkpoint: Checkpoint;
  readonly version: number;
  /** The run's whole event log, seq 1..n. */
  readonly events: readonly RunEvent[];
  /** The thread state as the run left it (what a thread rehydrated from the archive gets). */
  readonly threadState: Record<string, JsonValue>;
  /**
   * Whether its messages joined its thread's history: false for a child run that read its
   * parent's thread without holding it ('inherit'), whose release writes nothing there.
   */
  readonly addsToThread: boolean;
}

/** A run as lists show it (the same fields as a hot run's summary). */
export interface ArchivedRunSummary {
  readonly runId: string;
  readonly tenantId: string;
  readonly agent: string;
  readonly threadId: string;
  readonly status: RunStatus;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** The agent version it was created on (absent: before versions, or not read by this list). */
  readonly agentVersion?: string;
}

/**
 * What a run list is narrowed by. One type for Redis's list and the archive's, so a list read
 * through both hands every filter to both (a filter one of them dropped showed a tenant's other
 * users' runs on the archive path).
 */
export interface RunListFilters {
  readonly tenantId: string;
  readonly status?: RunStatus | undefined;
  readonly agent?: string | undefined;
  readonly threadId?: string | undefined;
  /** Runs of this fairness key; a run without one has its tenant's (docs/fairness.md). */
  readonly fairnessKey?: string | undefined;
  /** Runs created on this agent version (docs/deployment-and-scaling.md). */
  readonly agentVersion?: string | undefined;
}

/** One page of archived runs, newest first (createdAt desc, then runId desc). */
export interface ArchiveListQuery extends RunListFilters {
  /** Only runs strictly after this position in the order (a page's last run). */
  readonly after?: { readonly createdAt: number; readonly runId: string } | null | undefined;
  readonly limit: number;
}

/** A thread as its archived runs left it. */
export interface ArchivedThread {
  /** The messages of its runs, in the order the runs finished. */
  readonly messages: Message[];
  /** The thread state the last finished run handed on. */
  readonly state: Record<string, JsonValue>;
  /** Its archived runs, oldest first (by createdAt). */
  readonly runIds: string[];
  /** The same runs with their createdAt (to order them among the runs Redis still has). */
  readonly runs: { readonly runId: string; readonly createdAt: number }[];
}

/**
 * Long-term record of finished runs and thread histories (Redis keeps the live ones). Every
 * write is idempotent: a run is written once (by run id, events by seq) however often it is
 * offered. Every read is scoped to a tenant: another tenant's run reads as a missing one.
 */
export interface RunArchive {
  /** Stores finished runs and what they added to their threads; a run already stored is kept. */
  putRuns(runs: readonly ArchivedRun[]): Promise<void>;
  /** Which of these runs the archive holds (whatever their tenant). */
  holds(runIds: readonly string[]): Promise<Set<string>>;
  /**
   * Which of these runs were deleted (deleteRun, deleteThread left a tombstone). Optional for
   * archives written before it: without it a resent create cannot tell a deleted run.
   */
  deleted?(runIds: readonly string[]): Promise<Set<string>>;
  loadRun(tenantId: string, runId: string): Promise<StoredCheckpoint | null>;
  /** Seq of the run's last event; null when the archive has no such run of this tenant. */
  lastSeq(tenantId: string, runId: string): Promise<number | null>;
  /**
   * Events with seq > afterSeq, in order; null when no such run of this tenant. `known`: the
   * caller has just read this run of this tenant (loadRun), so its existence is not checked again.
   */
  readEvents(
    tenantId: string,
    runId: string,
    afterSeq?: number,
    opts?: { readonly known?: boolean },
  ): Promise<RunEvent[] | null>;
  /** At most `limit` runs after `after`, newest first. */
  listRuns(query: ArchiveListQuery): Promise<ArchivedRunSummary[]>;
  /** The tenant's archived runs among `runIds` (any order; another tenant's are left out). */
  summaries(tenantId: string, runIds: readonly string[]): Promise<ArchivedRunSummary[]>;
  /** Null when the archive holds no run of that thread. */
  loadThread(tenantId: string, threadId: string): Promise<ArchivedThread | null>;
  /** Removes the run, its events and its thread messages; false when there was none. */
  deleteRun(tenantId: string, runId: string): Promise<boolean>;
  /** Removes every archived run of the thread; answers their ids. */
  deleteThread(tenantId: string, threadId: string): Promise<string[]>;
  close(): Promise<void>;
}
