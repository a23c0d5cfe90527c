import type { JsonValue, Message, MultitaskStrategy } from '@baton/protocol';
import { BatonKeys, type ThreadDataKeys } from './keys.ts';
import { defineScript, type LuaScript, type RedisClient } from './scripts.ts';
import { RunAlreadyReleasedError } from '../errors/run-already-released-error.ts';
import type { HistoryReference } from './thread-history-reference.ts';

export { RunAlreadyReleasedError };

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

const DEFAULT_THREAD_LIMITS: ThreadLimits = {
  maxMessages: 5_000,
  maxBytes: 8 * 1024 * 1024,
  windowMessages: 500,
  windowBytes: 1024 * 1024,
};

/** A thread snapshot and where its messages stand in the thread's list (loadForRun). */
export interface ThreadSnapshotForRun extends ThreadSnapshot {
  /** For a run created from `messages` to reference instead of copy (history-reference.ts). */
  readonly reference: HistoryReference;
}

/**
 * A thread lives while it has an active or queued run, and THREAD_TTL after its last release.
 * Expects, in scope: ttl ('0' = keep while live) and KEYS = every key of the thread.
 */
const THREAD_TTL_LUA = `
local live = redis.call('HEXISTS', KEYS[1], 'activeRunId') == 1 or redis.call('LLEN', KEYS[2]) > 0
for i = 1, #KEYS do
  if live then redis.call('PERSIST', KEYS[i]) else redis.call('EXPIRE', KEYS[i], ttl) end
end
`;

/**
 * KEYS: meta, queue, runs, released, messages, state
 * ARGV: runId, strategy, now, ttl, maxMessages, maxBytes, inputCount, inputBytes
 * Reply: {'acquired'} | {'busy', active} | {'queued', position, active} | {'interrupt', active}
 *      | {'released'} | {'too_large', entries, bytes}
 * A run already active or queued is answered as before (a resend); a new one is admitted only
 * while the list's entries and bytes, plus its input, stay within the limits. The bytes are
 * kept in meta (`bytes`, measured up to entry `blen`): each acquire measures only the entries
 * appended since (by releases of this or an earlier release of Baton, or a seed), so the check
 * never reads the whole history.
 */
const ACQUIRE_LUA = `
local meta, queue, runs, released, messages = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local runId, strategy, now, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('HEXISTS', released, runId) == 1 then return {'released'} end
local active = redis.call('HGET', meta, 'activeRunId')
if active == runId then return {'acquired'} end
local pos = redis.call('LPOS', queue, runId)
if pos then
  if strategy == 'interrupt' then return {'interrupt', active} end
  return {'queued', pos + 1, active}
end
local n = redis.call('LLEN', messages)
local fields = redis.call('HMGET', meta, 'blen', 'bytes')
local seen, bytes = tonumber(fields[1]) or 0, tonumber(fields[2]) or 0
if seen > n then seen, bytes = 0, 0 end
local measured = seen < n
if measured then
  for i = seen, n - 1, 1000 do
    local chunk = redis.call('LRANGE', messages, i, math.min(i + 999, n - 1))
    for j = 1, #chunk do bytes = bytes + #chunk[j] end
  end
end
if n + tonumber(ARGV[7]) > tonumber(ARGV[5]) or bytes + tonumber(ARGV[8]) > tonumber(ARGV[6]) then
  -- kept on a meta that exists only (it has the thread's TTL; one made here would have none)
  if measured and redis.call('EXISTS', meta) == 1 then
    redis.call('HSET', meta, 'blen', n, 'bytes', bytes)
  end
  return {'too_large', n, bytes}
end
-- admitted, busy or queued: meta exists, or is given the thread's TTL below
if measured then redis.call('HSET', meta, 'blen', n, 'bytes', bytes) end
if not active or active == '' then
  redis.call('HSET', meta, 'activeRunId', runId)
  redis.call('ZADD', runs, 'NX', now, runId)
  ${THREAD_TTL_LUA}
  return {'acquired'}
end
if strategy == 'reject' then return {'busy', active} end
if strategy == 'enqueue' then
  local n = redis.call('RPUSH', queue, runId)
  redis.call('ZADD', runs, 'NX', now, runId)
  ${THREAD_TTL_LUA}
  return {'queued', n, active}
end
if strategy == 'interrupt' then
  redis.call('LPUSH', queue, runId)
  redis.call('ZADD', runs, 'NX', now, runId)
  ${THREAD_TTL_LUA}
  return {'interrupt', active}
end
return redis.error_reply('unknown multitask strategy ' .. strategy)
`;

/**
 * KEYS: meta, queue, runs, released, messages, state
 * ARGV: runId, setState ('1'|'0'), stateJson, ttl, messageJson…
 * Reply: {first (1|0), next ('' = none)}
 */
const RELEASE_LUA = `
local meta, queue, released, messages, state = KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6]
local runId, ttl = ARGV[1], ARGV[4]
local prev = redis.call('HGET', released, runId)
if prev then return {0, prev} end
local nextRun = ''
if redis.call('HGET', meta, 'activeRunId') == runId then
  -- only the active run writes the thread: a queued run that never started adds nothing
  -- one RPUSH per 1,000 messages, not one per message (unpack's stack limit bounds a batch)
  local i = 5
  while i <= #ARGV do
    local last = math.min(i + 999, #ARGV)
    redis.call('RPUSH', messages, unpack(ARGV, i, last))
    i = last + 1
  end
  if ARGV[2] == '1' then redis.call('SET', state, ARGV[3]) end
  local n = redis.call('LPOP', queue)
  if n then
    nextRun = n
    redis.call('HSET', meta, 'activeRunId', n)
  else
    redis.call('HDEL', meta, 'activeRunId')
  end
else
  -- a queued run that ends before it started (cancelled) leaves the queue
  redis.call('LREM', queue, 0, runId)
end
redis.call('HSET', released, runId, nextRun)
${THREAD_TTL_LUA}
return {1, nextRun}
`;

/**
 * A run that never came to be (its create failed before the run was written) gives the thread
 * back as if it had never asked: active or queued, it leaves the thread and its run index, the
 * next queued run is promoted, and, unlike RELEASE_LUA, nothing marks it released: a resend of
 * the same request (the same derived run id) acquires the thread again. A run released already
 * (it existed and ended) is left as it is.
 * KEYS: meta, queue, runs, released, messages, state
 * ARGV: runId, ttl
 * Reply: {abandoned (1|0), next ('' = none)}
 */
const ABANDON_LUA = `
local meta, queue, runs, released = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local runId, ttl = ARGV[1], ARGV[2]
if redis.call('HEXISTS', released, runId) == 1 then return {0, ''} end
local nextRun = ''
if redis.call('HGET', meta, 'activeRunId') == runId then
  local n = redis.call('LPOP', queue)
  if n then
    nextRun = n
    redis.call('HSET', meta, 'activeRunId', n)
  else
    redis.call('HDEL', meta, 'activeRunId')
  end
else
  redis.call('LREM', queue, 0, runId)
end
redis.call('ZREM', runs, runId)
${THREAD_TTL_LUA}
return {1, nextRun}
`;

/**
 * Deletes a thread that has no active or queued run (DELETE /v1/threads/:id).
 * KEYS: meta, queue, runs, released, messages, state
 * Reply: {'deleted', runId…} | {'busy', activeRunId} | {'missing'}
 */
const DELETE_LUA = `
if redis.call('EXISTS', unpack(KEYS)) == 0 then return {'missing'} end
local active = redis.call('HGET', KEYS[1], 'activeRunId')
if active and active ~= '' then return {'busy', active} end
local queued = redis.call('LINDEX', KEYS[2], 0)
if queued then return {'busy', queued} end
local runs = redis.call('ZRANGE', KEYS[3], 0, -1)
redis.call('DEL', unpack(KEYS))
local out = {'deleted'}
for i = 1, #runs do out[#out + 1] = runs[i] end
return out
`;

/**
 * A deleted run leaves its thread: its messages leave the history (the block its release
 * appended, found by message ids from the end among the messages not removed before:
 * caller-chosen ids may repeat elsewhere, a whole block in that order does not), and it leaves
 * the run index. A thread left with no run, active or queued, is deleted whole (history, state):
 * nothing of it comes back on a later run.
 * A removed message stays in the list as a tombstone, `~<generation>~<its JSON>` (generation: the
 * thread's `fgen`, counted per removal): runs created before reference the list by position
 * (THREAD_REFERENCE in history-reference.ts) and still read it; the thread's readers skip it.
 * KEYS: meta, queue, runs, released, messages, state
 * ARGV: runId, ttl, messageId… (the run's own messages, in order)
 * Reply: {'active'} (release it first) | {'kept', removedMessages} | {'deleted', removedMessages}
 */
const FORGET_RUN_LUA = `
local meta, queue, runs, released, messages = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local runId, ttl = ARGV[1], ARGV[2]
if redis.call('HGET', meta, 'activeRunId') == runId then return {'active'} end
local n = #ARGV - 2
local removed = 0
if n > 0 then
  local list = redis.call('LRANGE', messages, 0, -1)
  -- positions (1-based) of the messages still in the history
  local live = {}
  for i = 1, #list do
    if string.sub(list[i], 1, 1) ~= '~' then live[#live + 1] = i end
  end
  local ids = {}
  local function idAt(i)
    if ids[i] == nil then
      local ok, m = pcall(cjson.decode, list[i])
      ids[i] = (ok and type(m) == 'table' and m.id) or false
    end
    return ids[i]
  end
  for start = #live - n + 1, 1, -1 do
    local match = true
    for j = 1, n do
      if idAt(live[start + j - 1]) ~= ARGV[2 + j] then match = false break end
    end
    if match then
      local gen = redis.call('HINCRBY', meta, 'fgen', 1)
      for j = 1, n do
        local at = live[start + j - 1]
        redis.call('LSET', messages, at - 1, '~' .. gen .. '~' .. list[at])
      end
      removed = n
      break
    end
  end
end
redis.call('ZREM', runs, runId)
redis.call('HDEL', released, runId)
redis.call('LREM', queue, 0, runId)
local active = redis.call('HGET', meta, 'activeRunId')
if (not active or active == '') and redis.call('LLEN', queue) == 0 and redis.call('ZCARD', runs) == 0 then
  redis.call('DEL', unpack(KEYS))
  return {'deleted', removed}
end
${THREAD_TTL_LUA}
return {'kept', removed}
`;

/**
 * A thread Redis forgot, given back its history from the archive before its next run reads it;
 * nothing when the thread has a history or a state already (another run seeded it first).
 * KEYS: meta, queue, runs, released, messages, state   ARGV: ttl, stateJson, messageJson…
 * Reply: 1 seeded | 0 left alone
 */
const SEED_LUA = `
local ttl = ARGV[1]
if redis.call('EXISTS', KEYS[5]) == 1 or redis.call('EXISTS', KEYS[6]) == 1 then return 0 end
for i = 3, #ARGV do redis.call('RPUSH', KEYS[5], ARGV[i]) end
redis.call('SET', KEYS[6], ARGV[2])
${THREAD_TTL_LUA}
return 1
`;

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
type ThreadAcquire = LuaScript<
  ThreadDataKeys,
  [
    runId: string,
    strategy: string,
    now: number,
    ttl: number,
    maxMessages: number,
    maxBytes: number,
    inputCount: number,
    inputBytes: number,
  ],
  [string, ...(string | number)[]]
>;
type ThreadRelease = LuaScript<
  ThreadDataKeys,
  [runId: string, setState: '1' | '0', stateJson: string, ttl: number, ...messages: string[]],
  [number, string]
>;
type ThreadAbandon = LuaScript<ThreadDataKeys, [runId: string, ttl: number], [number, string]>;
type ThreadDelete = LuaScript<ThreadDataKeys, [], string[]>;
type ThreadSeed = LuaScript<
  ThreadDataKeys,
  [ttl: number, stateJson: string, ...messages: string[]],
  number
>;
type ThreadForgetRun = LuaScript<
  ThreadDataKeys,
  [runId: string, ttl: number, ...messageIds: string[]],
  [string, number?]
>;

/**
 * Lua: `window_of(list, maxEntries, maxBytes)` → n (the list's length), the list's last entries
 * newest first: at most maxEntries, and no more once their live messages (not `~` tombstones)
 * passed maxBytes (the entry that passed it is included: windowOf drops it). Read from the end in
 * chunks, so a run on a long thread of large messages reads about its window's bytes, not
 * maxEntries of them.
 */
const WINDOW_LUA = `
local function window_of(list, maxEntries, maxBytes)
  local n = redis.call('LLEN', list)
  local out, bytes = {}, 0
  local lowest = math.max(0, n - maxEntries)
  local stop = n - 1
  while stop >= lowest do
    local start = math.max(lowest, stop - 49)
    local chunk = redis.call('LRANGE', list, start, stop)
    for i = #chunk, 1, -1 do
      local entry = chunk[i]
      out[#out + 1] = entry
      if string.sub(entry, 1, 1) ~= '~' then
        bytes = bytes + #entry
        if bytes > maxBytes then return n, out end
      end
    end
    stop = start - 1
  end
  return n, out
end
`;

/**
 * The thread's history window (see windowOf) and state. A reader that holds the window its run
 * was created with (`expected` messages, ending with the run's last known message) gets only the
 * list's last entry while nothing was ever removed from the list (a removal leaves a tombstone in
 * place: see FORGET_RUN_LUA) and the list is no shorter: lists only grow, and only the run that
 * holds the thread appends, so the same last message means the same history.
 * KEYS: messages, state, meta   ARGV: expected (0 = read the window), window entries, window bytes
 * Reply: {'same', lastJson, stateJson|false}
 *      | {'all', {messageJson…} (newest first), stateJson|false, listLength}
 */
const HISTORY_LUA = `${WINDOW_LUA}
local expected = tonumber(ARGV[1])
local n = redis.call('LLEN', KEYS[1])
if expected > 0 and n >= expected and redis.call('HEXISTS', KEYS[3], 'fgen') == 0 then
  return {'same', redis.call('LINDEX', KEYS[1], -1), redis.call('GET', KEYS[2])}
end
local length, entries = window_of(KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
return {'all', entries, redis.call('GET', KEYS[2]), length}`;
type ThreadHistory = LuaScript<
  [messages: string, state: string, meta: string],
  [expected: number, windowMessages: number, windowBytes: number],
  ['same', string, string | null] | ['all', string[], string | null, number]
>;

/**
 * What a run created on the thread starts from, consistent, in one script: the thread's active
 * run and removal generation, its history window (WINDOW_LUA), state, queue and runs.
 * KEYS: meta, queue, runs, released, messages, state   ARGV: window entries, window bytes
 * Reply: {active|false, fgen|false, listLength, {entry…} (newest first), state|false, {queued…},
 *         {runId…}}
 */
const LOAD_FOR_RUN_LUA = `${WINDOW_LUA}
local n, entries = window_of(KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]))
local meta = redis.call('HMGET', KEYS[1], 'activeRunId', 'fgen')
return {meta[1], meta[2], n, entries, redis.call('GET', KEYS[6]),
  redis.call('LRANGE', KEYS[2], 0, -1), redis.call('ZRANGE', KEYS[3], 0, -1)}`;
type ThreadLoadForRun = LuaScript<
  ThreadDataKeys,
  [windowMessages: number, windowBytes: number],
  [string | null, string | null, number, string[], string | null, string[], string[]]
>;

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
    this.ttlSeconds = opts.ttlSeconds ?? 7 * 86_400;
    // A limit left undefined (a configuration built in code before the limits existed) keeps
    // its default: spread as is, it would replace the default with undefined.
    const given = Object.entries(opts.limits ?? {}).filter(([, value]) => value !== undefined);
    this.limits = { ...DEFAULT_THREAD_LIMITS, ...Object.fromEntries(given) };
    this.acquireScript = defineScript(this.redis, 'batonThreadAcquire', 6, ACQUIRE_LUA);
    this.releaseScript = defineScript(this.redis, 'batonThreadRelease', 6, RELEASE_LUA);
    this.abandonScript = defineScript(this.redis, 'batonThreadAbandon', 6, ABANDON_LUA);
    this.deleteScript = defineScript(this.redis, 'batonThreadDelete', 6, DELETE_LUA);
    this.historyScript = defineScript(this.redis, 'batonThreadHistory', 3, HISTORY_LUA);
    this.loadForRunScript = defineScript(this.redis, 'batonThreadLoadForRun', 6, LOAD_FOR_RUN_LUA);
    this.forgetRunScript = defineScript(this.redis, 'batonThreadForgetRun', 6, FORGET_RUN_LUA);
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

/** ZRANGE … WITHSCORES as runs, oldest first. */
function runsOf(scored: readonly string[]): ThreadRun[] {
  const runs: ThreadRun[] = [];
  for (let i = 0; i + 1 < scored.length; i += 2)
    runs.push({ runId: scored[i] ?? '', createdAt: Number(scored[i + 1]) });
  return runs;
}

/** Bytes of the messages as JSON (what the thread's list holds of them). */
export function jsonBytes(messages: readonly unknown[]): number {
  let bytes = 0;
  for (const m of messages) bytes += Buffer.byteLength(JSON.stringify(m));
  return bytes;
}

/**
 * The history window a run of a thread is given (THREAD_HISTORY_MAX_MESSAGES,
 * THREAD_HISTORY_MAX_BYTES): the newest messages of the thread, as many as fit both budgets
 * (`entries`: the list's last entries, the first at position `first`; removed ones are skipped
 * and not counted), then moved forward past tool results at its start, so that a tool result
 * never reaches the model without the assistant message that called it. Whole messages only; an
 * empty window when even the newest message is over the byte budget. `start`: the window's
 * position in the list (its length when empty).
 */
export function windowOf(
  entries: readonly string[],
  first: number,
  limits: Pick<ThreadLimits, 'windowMessages' | 'windowBytes'>,
): { readonly messages: Message[]; readonly start: number } {
  let bytes = 0;
  let count = 0;
  let from = entries.length;
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    const entry = entries[i] ?? '';
    if (!entry.startsWith('~')) {
      bytes += Buffer.byteLength(entry);
      count += 1;
      if (bytes > limits.windowBytes || count > limits.windowMessages) break;
    }
    from = i;
  }
  let messages = liveMessages(entries.slice(from));
  const cut = messages.findIndex((m) => m.role !== 'tool');
  if (cut !== 0) {
    const dropped = cut === -1 ? messages.length : cut;
    // past the dropped messages (and the removed entries among them) to the first one kept
    let seen = 0;
    while (from < entries.length && seen < dropped) {
      if (!(entries[from] ?? '').startsWith('~')) seen += 1;
      from += 1;
    }
    messages = messages.slice(dropped);
  }
  // removed entries before the first message kept are not part of the window either
  while (from < entries.length && (entries[from] ?? '').startsWith('~')) from += 1;
  return { messages, start: first + from };
}

/** The thread's history from its list: every message but the removed ones (tombstones). */
function liveMessages(list: readonly string[]): Message[] {
  const out: Message[] = [];
  for (const m of list) if (!m.startsWith('~')) out.push(JSON.parse(m) as Message);
  return out;
}

function parseState(raw: string | null): Record<string, JsonValue> {
  return raw === null ? {} : (JSON.parse(raw) as Record<string, JsonValue>);
}
