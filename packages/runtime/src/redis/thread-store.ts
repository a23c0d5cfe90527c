import type { JsonValue, Message, MultitaskStrategy } from '@baton/protocol';
import { BatonKeys, type ThreadDataKeys } from './keys.ts';
import { defineScript, type RedisClient } from './scripts.ts';
import { RunAlreadyReleasedError } from '../errors/run-already-released-error.ts';
import {
  ABANDON_LUA,
  ACQUIRE_LUA,
  DELETE_LUA,
  FORGET_RUN_LUA,
  HISTORY_LUA,
  LOAD_FOR_RUN_LUA,
  RELEASE_LUA,
  SEED_LUA,
  type ThreadAbandon,
  type ThreadAcquire,
  type ThreadDelete,
  type ThreadForgetRun,
  type ThreadHistory,
  type ThreadLoadForRun,
  type ThreadRelease,
  type ThreadSeed,
} from './thread-scripts.ts';
import {
  DEFAULT_THREAD_LIMITS,
  DEFAULT_THREAD_TTL_SECONDS,
  type AcquireResult,
  type ThreadLimits,
  type ThreadPage,
  type ThreadSnapshot,
  type ThreadSnapshotForRun,
} from './thread-types.ts';
import { jsonBytes, liveMessages, parseState, runsOf, windowOf } from './thread-window.ts';

export { RunAlreadyReleasedError };
export type {
  AcquireResult,
  ThreadLimits,
  ThreadPage,
  ThreadRun,
  ThreadSnapshot,
  ThreadSnapshotForRun,
} from './thread-types.ts';
export { jsonBytes, windowOf };

export interface RedisThreadStoreOptions {
  readonly redis: RedisClient;
  readonly prefix?: string;
  /** Score of a run in the thread's run index when acquire() sees it first (default Date.now). */
  readonly now?: () => number;
  /** Seconds a thread is kept after its last run released it (default 7 days). */
  readonly ttlSeconds?: number;
  /** Size limits and the history window (default DEFAULT_THREAD_LIMITS). */
  readonly limits?: Partial<ThreadLimits>;
}

/**
 * Threads on Redis: history, persistent thread state, the active run and the multitask queue.
 * acquire/release are single Lua scripts on the thread's hash-tagged keys.
 */
export class RedisThreadStore {
  readonly keys: BatonKeys;
  private readonly redis: RedisClient;
  private readonly now: () => number;
  private readonly acquireScript: ThreadAcquire;
  private readonly releaseScript: ThreadRelease;
  private readonly abandonScript: ThreadAbandon;
  private readonly deleteScript: ThreadDelete;
  private readonly historyScript: ThreadHistory;
  private readonly loadForRunScript: ThreadLoadForRun;
  private readonly forgetRunScript: ThreadForgetRun;
  private readonly seedScript: ThreadSeed;
  private readonly ttlSeconds: number;
  readonly limits: ThreadLimits;

  constructor(opts: RedisThreadStoreOptions) {
    this.redis = opts.redis;
    this.keys = new BatonKeys(opts.prefix);
    this.now = opts.now ?? Date.now;
    this.ttlSeconds = opts.ttlSeconds ?? DEFAULT_THREAD_TTL_SECONDS;
    // A limit left undefined (a configuration built in code before the limits existed) keeps
    // its default: spread as is, it would replace the default with undefined.
    const given = Object.entries(opts.limits ?? {}).filter(([, value]) => value !== undefined);
    this.limits = { ...DEFAULT_THREAD_LIMITS, ...Object.fromEntries(given) };
    this.acquireScript = defineScript(this.redis, 'batonThreadAcquire3', 6, ACQUIRE_LUA);
    this.releaseScript = defineScript(this.redis, 'batonThreadRelease2', 6, RELEASE_LUA);
    this.abandonScript = defineScript(this.redis, 'batonThreadAbandon', 6, ABANDON_LUA);
    this.deleteScript = defineScript(this.redis, 'batonThreadDelete', 6, DELETE_LUA);
    this.historyScript = defineScript(this.redis, 'batonThreadHistory4', 3, HISTORY_LUA);
    this.loadForRunScript = defineScript(this.redis, 'batonThreadLoadForRun', 6, LOAD_FOR_RUN_LUA);
    this.forgetRunScript = defineScript(this.redis, 'batonThreadForgetRun2', 6, FORGET_RUN_LUA);
    this.seedScript = defineScript(this.redis, 'batonThreadSeed', 6, SEED_LUA);
  }

  /**
   * Gives a thread with neither history nor state the ones the archive kept (the thread's
   * keys had expired); false when it has some already (left alone). Its TTL rule is acquire's.
   */
  async seed(
    tenantId: string,
    threadId: string,
    messages: readonly Message[],
    state: Record<string, JsonValue>,
  ): Promise<boolean> {
    const reply = await this.seedScript(this.scriptKeys(tenantId, threadId), [
      this.ttlSeconds,
      JSON.stringify(state),
      ...messages.map((m) => JSON.stringify(m)),
    ]);
    return reply === 1;
  }

  /**
   * Make runId the thread's active run, or apply the multitask strategy when another run is
   * active: 'reject' → busy; 'enqueue' → queued at the tail; 'interrupt' → queued at the head, the
   * caller cancels the active run and this one is promoted when it releases. Idempotent for a run
   * that is already active or queued. Throws RunAlreadyReleasedError for a released run.
   * A new run is refused ('too_large', nothing written) when the thread's list with its `input`
   * would hold more entries or bytes than the limits allow.
   */
  async acquire(
    tenantId: string,
    threadId: string,
    runId: string,
    strategy: MultitaskStrategy,
    /** The run's createdAt: its score in the thread's run index (lists show it). */
    at: number = this.now(),
    /** The run's input messages, which its release appends (counted against the limits). */
    input: readonly unknown[] = [],
  ): Promise<AcquireResult> {
    const reply = await this.acquireScript(this.scriptKeys(tenantId, threadId), [
      runId,
      strategy,
      at,
      this.ttlSeconds,
      this.limits.maxMessages,
      this.limits.maxBytes,
      input.length,
      jsonBytes(input),
    ]);
    switch (reply[0]) {
      case 'acquired':
        return { kind: 'acquired' };
      case 'too_large':
        return { kind: 'too_large', messages: Number(reply[1]), bytes: Number(reply[2]) };
      case 'busy':
        return { kind: 'busy', activeRunId: String(reply[1]) };
      case 'queued':
        return { kind: 'queued', position: Number(reply[1]), activeRunId: String(reply[2]) };
      case 'interrupt':
        return { kind: 'interrupt', activeRunId: String(reply[1]) };
      case 'released':
        throw new RunAlreadyReleasedError(threadId, runId);
      default:
        throw new Error(`acquire: unexpected reply ${JSON.stringify(reply)}`);
    }
  }

  /**
   * The run ended: append its new messages to the history, set the thread state (null = keep),
   * clear it as active and promote the next queued run, whose id is returned (null = none).
   * Idempotent per runId: a repeated release changes nothing and returns the run promoted the
   * first time. Releasing a queued run that never started removes it from the queue and writes
   * nothing to the thread (its messages would land in the middle of the active run's).
   */
  async release(
    tenantId: string,
    threadId: string,
    runId: string,
    appendMessages: readonly Message[],
    threadState: Record<string, JsonValue> | null,
  ): Promise<string | null> {
    const reply = await this.releaseScript(this.scriptKeys(tenantId, threadId), [
      runId,
      threadState === null ? '0' : '1',
      threadState === null ? '' : JSON.stringify(threadState),
      this.ttlSeconds,
      ...appendMessages.map((m) => JSON.stringify(m)),
    ]);
    return reply[1] === '' ? null : reply[1];
  }

  /**
   * Gives the thread back from a run that never came to be (see ABANDON_LUA): the run a resend
   * of the same request creates under the same id acquires it again. Answers the run promoted in
   * its place (null = none). Only for a run known not to exist: a run that exists and abandons
   * its thread would run beside the next one.
   */
  async abandon(tenantId: string, threadId: string, runId: string): Promise<string | null> {
    const reply = await this.abandonScript(this.scriptKeys(tenantId, threadId), [
      runId,
      this.ttlSeconds,
    ]);
    return reply[1] === '' ? null : reply[1];
  }

  /**
   * Deletes a thread with no active or queued run; returns the ids of its runs (the caller
   * deletes those), 'busy' with the run that holds it, or 'missing'.
   */
  async delete(
    tenantId: string,
    threadId: string,
  ): Promise<
    { kind: 'deleted'; runIds: string[] } | { kind: 'busy'; runId: string } | { kind: 'missing' }
  > {
    const reply = await this.deleteScript(this.scriptKeys(tenantId, threadId), []);
    if (reply[0] === 'deleted') return { kind: 'deleted', runIds: reply.slice(1) };
    if (reply[0] === 'busy') return { kind: 'busy', runId: reply[1] ?? '' };
    return { kind: 'missing' };
  }

  /**
   * A deleted run leaves the thread: `messageIds` (what its release appended) leave the history
   * and the run leaves the index; a thread left with no run at all is deleted. 'active' while
   * the run still holds the thread (release it first). Idempotent.
   */
  async forgetRun(
    tenantId: string,
    threadId: string,
    runId: string,
    messageIds: readonly string[],
  ): Promise<{ kind: 'active' } | { kind: 'kept' | 'deleted'; removedMessages: number }> {
    const reply = await this.forgetRunScript(this.scriptKeys(tenantId, threadId), [
      runId,
      this.ttlSeconds,
      ...messageIds,
    ]);
    if (reply[0] === 'active') return { kind: 'active' };
    return {
      kind: reply[0] === 'deleted' ? 'deleted' : 'kept',
      removedMessages: Number(reply[1] ?? 0),
    };
  }

  /** KEYS of every thread script, in the order the scripts expect. */
  private scriptKeys(tenantId: string, threadId: string): ThreadDataKeys {
    return this.keys.threadDataKeys(tenantId, threadId);
  }

  /**
   * What a run starts from: the thread's history window (windowOf) and state, consistent, in one
   * round trip. `known`: the window the run was created with; when the thread still ends where
   * it did, those very messages are returned and the list is not read again.
   */
  async history(
    tenantId: string,
    threadId: string,
    known: readonly Message[] = [],
  ): Promise<Pick<ThreadSnapshot, 'messages' | 'state'>> {
    const k = this.keys.thread(tenantId, threadId);
    const keys: [string, string, string] = [k.messages, k.state, k.meta];
    const { windowMessages, windowBytes } = this.limits;
    let reply = await this.historyScript(keys, [known.length, windowMessages, windowBytes]);
    if (reply[0] === 'same') {
      const last = JSON.parse(reply[1]) as Message;
      if (last.id === known.at(-1)?.id)
        return { messages: [...known], state: parseState(reply[2]) };
      reply = await this.historyScript(keys, [0, windowMessages, windowBytes]);
    }
    if (reply[0] !== 'all') throw new Error('thread history: unexpected reply');
    const [, newestFirst, state, listLength] = reply;
    const entries = [...newestFirst].reverse();
    const { messages } = windowOf(entries, Number(listLength) - entries.length, this.limits);
    return { messages, state: parseState(state) };
  }

  /**
   * The thread's state, and whether it has a history at all, without reading the history (the
   * archiver's question).
   */
  async stateOf(
    tenantId: string,
    threadId: string,
  ): Promise<{ readonly state: Record<string, JsonValue>; readonly empty: boolean }> {
    const k = this.keys.thread(tenantId, threadId);
    const results = await this.redis.multi().llen(k.messages).get(k.state).exec();
    if (!results) throw new Error('thread state: transaction aborted');
    for (const [err] of results) if (err) throw err;
    const [length, state] = results.map(([, v]) => v) as [number, string | null];
    return { state: parseState(state), empty: length === 0 && state === null };
  }

  /**
   * The whole thread, every message (one MULTI on one slot). For tests and small threads: the
   * service reads pages (page) and runs read their window (loadForRun).
   */
  async load(tenantId: string, threadId: string): Promise<ThreadSnapshot> {
    const page = await this.page(tenantId, threadId, {
      before: null,
      limit: Number.MAX_SAFE_INTEGER,
      maxBytes: Number.MAX_SAFE_INTEGER,
    });
    return {
      messages: page.messages,
      state: page.state,
      activeRunId: page.activeRunId,
      queued: page.queued,
      runIds: page.runIds,
    };
  }

  /**
   * A page of the thread: at most `limit` entries of its list before position `before` (null:
   * the newest), less the removed ones, and fewer when their JSON passes `maxBytes` (the newest
   * message of the page is kept whatever its size, so paging always moves on); its state, active
   * and queued runs and its runs with their createdAt, in one MULTI on one slot.
   */
  async page(
    tenantId: string,
    threadId: string,
    at: { readonly before: number | null; readonly limit: number; readonly maxBytes: number },
  ): Promise<ThreadPage> {
    const k = this.keys.thread(tenantId, threadId);
    const from = at.before === null ? null : Math.max(0, at.before - at.limit);
    const tx = this.redis.multi().hget(k.meta, 'activeRunId').llen(k.messages);
    if (from === null) tx.lrange(k.messages, -Math.min(at.limit, 2 ** 31), -1);
    // (LRANGE 0 -1 would be the whole list: a page before the first entry is empty)
    else if ((at.before ?? 0) <= 0) tx.lrange(k.messages, 1, 0);
    else tx.lrange(k.messages, from, (at.before ?? 0) - 1);
    const results = await tx
      .get(k.state)
      .lrange(k.queue, 0, -1)
      .zrange(k.runs, '0', '-1', 'WITHSCORES')
      .exec();
    if (!results) throw new Error('thread load: transaction aborted');
    for (const [err] of results) if (err) throw err;
    const [active, listLength, entries, state, queued, scored] = results.map(([, v]) => v) as [
      string | null,
      number,
      string[],
      string | null,
      string[],
      string[],
    ];
    // `before` null: entries are the list's last ones; from an empty range (a stale cursor
    // past the end) nothing.
    const first = from ?? listLength - entries.length;
    let bytes = 0;
    let count = 0;
    let kept = entries.length;
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const entry = entries[i] ?? '';
      if (!entry.startsWith('~')) {
        bytes += Buffer.byteLength(entry);
        if (bytes > at.maxBytes && count > 0) break;
        count += 1;
      }
      kept = i;
    }
    const start = first + kept;
    return {
      messages: liveMessages(entries.slice(kept)),
      state: parseState(state),
      activeRunId: active === null || active === '' ? null : active,
      queued,
      runIds: runsOf(scored).map((r) => r.runId),
      runs: runsOf(scored),
      before: start > 0 && entries.length > 0 ? start : null,
      listLength,
    };
  }

  /**
   * What a run created on the thread starts from: its state, its runs and its history window
   * (windowOf: only the window's entries are read), and where that window stands in the
   * thread's list: what the run references instead of copying its messages
   * (history-reference.ts).
   */
  async loadForRun(tenantId: string, threadId: string): Promise<ThreadSnapshotForRun> {
    const [active, fgen, listLength, newestFirst, state, queued, runIds] =
      await this.loadForRunScript(this.scriptKeys(tenantId, threadId), [
        this.limits.windowMessages,
        this.limits.windowBytes,
      ]);
    const entries = [...newestFirst].reverse();
    const window = windowOf(entries, listLength - entries.length, this.limits);
    return {
      messages: window.messages,
      state: parseState(state),
      activeRunId: active === null || active === '' ? null : active,
      queued,
      runIds,
      reference: {
        listLength,
        generation: Number(fgen ?? 0),
        count: window.messages.length,
        start: window.start,
      },
    };
  }
}
