import type {
  Checkpoint,
  CheckpointTrigger,
  EventBody,
  Message,
  RunEvent,
  JsonValue,
} from '@baton/protocol';
import type { CommitResult, EventAppender, RunStore, StoredCheckpoint } from '../ports.ts';
import { VersionConflictError } from '../errors/version-conflict-error.ts';

export interface CommitRecord {
  readonly runId: string;
  readonly version: number;
  readonly trigger: CheckpointTrigger | null;
  readonly checkpoint: Checkpoint;
}

/** In-memory RunStore with the same compare-and-set and sequencing contract as the Redis one. */
export class MemoryRunStore implements RunStore, EventAppender {
  private readonly runs = new Map<string, StoredCheckpoint>();
  private readonly logs = new Map<string, RunEvent[]>();
  /** Every commit, for tests that compare checkpoints and triggers across drivers. */
  readonly commits: CommitRecord[] = [];
  private readonly clockNow: () => number;

  constructor(now: () => number) {
    this.clockNow = now;
  }

  private sequence(cp: Checkpoint, bodies: readonly EventBody[]): RunEvent[] {
    const log = this.logs.get(cp.identity.runId) ?? [];
    this.logs.set(cp.identity.runId, log);
    const at = this.clockNow();
    const out = bodies.map((body, i): RunEvent => ({
      seq: log.length + i + 1,
      runId: cp.identity.runId,
      threadId: cp.identity.threadId,
      turnId: cp.identity.turnId,
      at,
      ...body,
    }));
    log.push(...out);
    return out;
  }

  create(checkpoint: Checkpoint, events: readonly EventBody[]): Promise<CommitResult> {
    const runId = checkpoint.identity.runId;
    if (this.runs.has(runId))
      return Promise.reject(
        new VersionConflictError(runId, 0, this.runs.get(runId)?.version ?? null),
      );
    this.runs.set(runId, { checkpoint: structuredClone(checkpoint), version: 1 });
    this.commits.push({
      runId,
      version: 1,
      trigger: null,
      checkpoint: structuredClone(checkpoint),
    });
    return Promise.resolve({ version: 1, events: this.sequence(checkpoint, events) });
  }

  load(runId: string): Promise<StoredCheckpoint | null> {
    const stored = this.runs.get(runId);
    return Promise.resolve(
      stored ? { checkpoint: structuredClone(stored.checkpoint), version: stored.version } : null,
    );
  }

  commit(
    runId: string,
    expectedVersion: number,
    checkpoint: Checkpoint,
    events: readonly EventBody[],
    trigger: CheckpointTrigger | null,
  ): Promise<CommitResult> {
    const stored = this.runs.get(runId);
    if (!stored || stored.version !== expectedVersion)
      return Promise.reject(
        new VersionConflictError(runId, expectedVersion, stored?.version ?? null),
      );
    const version = expectedVersion + 1;
    this.runs.set(runId, { checkpoint: structuredClone(checkpoint), version });
    this.commits.push({ runId, version, trigger, checkpoint: structuredClone(checkpoint) });
    return Promise.resolve({ version, events: this.sequence(checkpoint, events) });
  }

  append(
    runId: string,
    expectedVersion: number,
    events: readonly EventBody[],
  ): Promise<readonly RunEvent[]> {
    const stored = this.runs.get(runId);
    if (!stored || stored.version !== expectedVersion)
      return Promise.reject(
        new VersionConflictError(runId, expectedVersion, stored?.version ?? null),
      );
    return Promise.resolve(this.sequence(stored.checkpoint, events));
  }

  events(runId: string, afterSeq = 0): RunEvent[] {
    return (this.logs.get(runId) ?? []).filter((e) => e.seq > afterSeq);
  }
}

export interface ThreadRecord {
  readonly threadId: string;
  messages: Message[];
  state: Record<string, JsonValue>;
  activeRunId: string | null;
  runIds: string[];
}

export class MemoryThreadStore {
  private readonly threads = new Map<string, ThreadRecord>();

  get(threadId: string): ThreadRecord {
    let thread = this.threads.get(threadId);
    if (!thread) {
      thread = { threadId, messages: [], state: {}, activeRunId: null, runIds: [] };
      this.threads.set(threadId, thread);
    }
    return thread;
  }
}
