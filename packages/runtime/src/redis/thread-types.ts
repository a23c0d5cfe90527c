import type { JsonValue, Message } from '@baton/protocol';
import type { HistoryReference } from '../run-record/history-reference.ts';
import { withRuntimeDefaults } from '../config/runtime-config.ts';

/** What RedisThreadStore answers (thread-store.ts). */
export type AcquireResult =
  | { readonly kind: 'acquired' }
  /** The thread holds, or with the run's input would hold, more than its limits allow. */
  | { readonly kind: 'too_large'; readonly messages: number; readonly bytes: number }
  | { readonly kind: 'busy'; readonly activeRunId: string }
  | { readonly kind: 'queued'; readonly position: number; readonly activeRunId: string }
  | { readonly kind: 'interrupt'; readonly activeRunId: string };

export interface ThreadSnapshot {
  readonly messages: Message[];
  readonly state: Record<string, JsonValue>;
  readonly activeRunId: string | null;
  /** Pending run ids, next to be promoted first. */
  readonly queued: string[];
  /** Every run of the thread, oldest first. */
  readonly runIds: string[];
}

/** The thread's runs with their createdAt (their index score), oldest first. */
export interface ThreadRun {
  readonly runId: string;
  readonly createdAt: number;
}

/**
 * A page of a thread for GET /v1/threads/:id: the newest messages before a position of its list,
 * oldest first, and where the page before them starts (null: this page reaches the first one).
 */
export interface ThreadPage extends ThreadSnapshot {
  /** runIds with their createdAt. */
  readonly runs: ThreadRun[];
  /** The list position the previous (older) page ends before; null when there is none. */
  readonly before: number | null;
  /** Entries of the thread's list (removed messages included): what the limits count. */
  readonly listLength: number;
}

/** Limits on what one thread holds and what a run of it reads (THREAD_* settings). */
export interface ThreadLimits {
  /** Entries the thread's list may hold (THREAD_MAX_MESSAGES). */
  readonly maxMessages: number;
  /** Bytes of JSON the thread's list may hold (THREAD_MAX_BYTES). */
  readonly maxBytes: number;
  /** At most this many of the newest entries are a run's history (THREAD_HISTORY_MAX_MESSAGES). */
  readonly windowMessages: number;
  /** A run's history is at most this many bytes of JSON (THREAD_HISTORY_MAX_BYTES). */
  readonly windowBytes: number;
}

const defaults = withRuntimeDefaults({});

/** The THREAD_* settings' defaults (the schema's), for a store built without limits (tests). */
export const DEFAULT_THREAD_LIMITS: ThreadLimits = {
  maxMessages: defaults.THREAD_MAX_MESSAGES,
  maxBytes: defaults.THREAD_MAX_BYTES,
  windowMessages: defaults.THREAD_HISTORY_MAX_MESSAGES,
  windowBytes: defaults.THREAD_HISTORY_MAX_BYTES,
};

/** THREAD_TTL_SECONDS' default. */
export const DEFAULT_THREAD_TTL_SECONDS = defaults.THREAD_TTL_SECONDS;

/** A thread snapshot and where its messages stand in the thread's list (loadForRun). */
export interface ThreadSnapshotForRun extends ThreadSnapshot {
  /** For a run created from `messages` to reference instead of copy (history-reference.ts). */
  readonly reference: HistoryReference;
}
