import type { JsonValue, Message, MultitaskStrategy } from '@baton/protocol';
import { BatonKeys, type ThreadDataKeys } from './keys.ts';
import { defineScript, type LuaScript, type RedisClient } from './scripts.ts';
import { RunAlreadyReleasedError } from '../errors/run-already-released-error.ts';
import type { HistoryReference } from '../run-record/history-reference.ts';

export { RunAlreadyReleasedError };

export type AcquireResult =
  | { readonly kind: 'acquired' }
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
 * ARGV: runId, strategy, now, ttl
 * Reply: {'acquired'} | {'busy', active} | {'queued', position, active} | {'interrupt', active} | {'released'}
 */
const ACQUIRE_LUA = `
local meta, queue, runs, released = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local runId, strategy, now, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('HEXISTS', released, runId) == 1 then return {'released'} end
local active = redis.call('HGET', meta, 'activeRunId')
if active == runId then return {'acquired'} end
local pos = redis.call('LPOS', queue, runId)
if pos then
  if strategy == 'interrupt' then return {'interrupt', active} end
  return {'queued', pos + 1, active}
end
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
}

/**
 * Threads on Redis: history, persistent thread state, the active run and the multitask queue.
 * acquire/release are single Lua scripts on the thread's hash-tagged keys.
 */
type ThreadAcquire = LuaScript<
  ThreadDataKeys,
  [runId: string, strategy: string, now: number, ttl: number],
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
 * The thread's messages and state. A reader that holds the first `expected` messages already
 * (a run created from the thread) gets only the last one when the list still has that length
 * and nothing was ever removed from it (a removal leaves a tombstone in place: see
 * FORGET_RUN_LUA): lists only grow, so the same length and the same last message mean the same
 * history.
 * KEYS: messages, state, meta   ARGV: expected (-1 = read everything)
 * Reply: {'same', lastJson, stateJson|false} | {'all', {messageJson…}, stateJson|false}
 */
const HISTORY_LUA = `
local expected = tonumber(ARGV[1])
if expected > 0 and redis.call('LLEN', KEYS[1]) == expected and redis.call('HEXISTS', KEYS[3], 'fgen') == 0 then
  return {'same', redis.call('LINDEX', KEYS[1], -1), redis.call('GET', KEYS[2])}
end
return {'all', redis.call('LRANGE', KEYS[1], 0, -1), redis.call('GET', KEYS[2])}`;
type ThreadHistory = LuaScript<
  [messages: string, state: string, meta: string],
  [expected: number],
  ['same', string, string | null] | ['all', string[], string | null]
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
  private readonly forgetRunScript: ThreadForgetRun;
  private readonly seedScript: ThreadSeed;
  private readonly ttlSeconds: number;

  constructor(opts: RedisThreadStoreOptions) {
    this.redis = opts.redis;
    this.keys = new BatonKeys(opts.prefix);
    this.now = opts.now ?? Date.now;
    this.ttlSeconds = opts.ttlSeconds ?? 7 * 86_400;
    this.acquireScript = defineScript(this.redis, 'batonThreadAcquire2', 6, ACQUIRE_LUA);
    this.releaseScript = defineScript(this.redis, 'batonThreadRelease2', 6, RELEASE_LUA);
    this.abandonScript = defineScript(this.redis, 'batonThreadAbandon', 6, ABANDON_LUA);
    this.deleteScript = defineScript(this.redis, 'batonThreadDelete', 6, DELETE_LUA);
    this.historyScript = defineScript(this.redis, 'batonThreadHistory3', 3, HISTORY_LUA);
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
   */
  async acquire(
    tenantId: string,
    threadId: string,
    runId: string,
    strategy: MultitaskStrategy,
    /** The run's createdAt: its score in the thread's run index (lists show it). */
    at: number = this.now(),
  ): Promise<AcquireResult> {
    const reply = await this.acquireScript(this.scriptKeys(tenantId, threadId), [
      runId,
      strategy,
      at,
      this.ttlSeconds,
    ]);
    switch (reply[0]) {
      case 'acquired':
        return { kind: 'acquired' };
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
   * What a run starts from: the thread's messages and state, consistent, in one round trip.
   * `known`: the history the run was created with; when the thread still ends where it did, those
   * very messages are returned and the list is not read again (it can be long).
   */
  async history(
    tenantId: string,
    threadId: string,
    known: readonly Message[] = [],
  ): Promise<Pick<ThreadSnapshot, 'messages' | 'state'>> {
    const k = this.keys.thread(tenantId, threadId);
    let reply = await this.historyScript([k.messages, k.state, k.meta], [known.length]);
    if (reply[0] === 'same') {
      const last = JSON.parse(reply[1]) as Message;
      if (last.id === known.at(-1)?.id)
        return { messages: [...known], state: parseState(reply[2]) };
      reply = await this.historyScript([k.messages, k.state, k.meta], [-1]);
    }
    const list = reply[0] === 'all' ? reply[1] : [];
    return { messages: liveMessages(list), state: parseState(reply[2]) };
  }

  /** A consistent snapshot of the thread (one MULTI on one slot). */
  async load(tenantId: string, threadId: string): Promise<ThreadSnapshot> {
    const { reference: _reference, ...snapshot } = await this.loadForRun(tenantId, threadId);
    return snapshot;
  }

  /**
   * load(), and where the history stands in the thread's list: what a run created from it
   * references instead of copying its messages (history-reference.ts).
   */
  async loadForRun(tenantId: string, threadId: string): Promise<ThreadSnapshotForRun> {
    const k = this.keys.thread(tenantId, threadId);
    const results = await this.redis
      .multi()
      .hmget(k.meta, 'activeRunId', 'fgen')
      .lrange(k.messages, 0, -1)
      .get(k.state)
      .lrange(k.queue, 0, -1)
      .zrange(k.runs, '0', '-1')
      .exec();
    if (!results) throw new Error('thread load: transaction aborted');
    for (const [err] of results) if (err) throw err;
    const [[active, fgen], messages, state, queued, runIds] = results.map(([, v]) => v) as [
      [string | null, string | null],
      string[],
      string | null,
      string[],
      string[],
    ];
    const live = liveMessages(messages);
    return {
      messages: live,
      state: parseState(state),
      activeRunId: active === null || active === '' ? null : active,
      queued,
      runIds,
      reference: { listLength: messages.length, generation: Number(fgen ?? 0), count: live.length },
    };
  }
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
