import type { Checkpoint, CheckpointTrigger, EventBody, RunEvent } from '@baton/protocol';

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

/** Fan-out of events already made durable by a commit (pub/sub, SSE, terminal). */
export interface EventSink {
  publish(events: readonly RunEvent[]): void | Promise<void>;
}

/** Ephemeral stream events (text deltas) that are sequenced and stored outside a commit. */
export interface EventAppender {
  append(
    runId: string,
    expectedVersion: number,
    events: readonly EventBody[],
  ): Promise<readonly RunEvent[]>;
}

/** Scheduling port: the in-process runner loops, the worker enqueues BullMQ jobs. */
export interface QueuePort {
  enqueueStep(
    runId: string,
    reason: 'start' | 'continue' | 'decision' | 'reconcile' | 'cancel',
    expectedVersion: number,
  ): Promise<void>;
}
