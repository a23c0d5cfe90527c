/**
 * The Lua scripts of RedisThreadStore (thread-store.ts), each on the thread's hash-tagged keys.
 * Fragments (THREAD_TTL_LUA, PROMOTE_NEXT_LUA, WINDOW_LUA) are pasted into the scripts that
 * use them, so each script stays one atomic EVAL.
 */
import type { ThreadDataKeys } from './keys.ts';
import type { LuaScript } from './scripts.ts';

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
 * The active run gives the thread to the next queued run (or to none). Expects, in scope: meta,
 * queue and nextRun (set to the promoted run's id).
 */
const PROMOTE_NEXT_LUA = `
local n = redis.call('LPOP', queue)
if n then
  nextRun = n
  redis.call('HSET', meta, 'activeRunId', n)
else
  redis.call('HDEL', meta, 'activeRunId')
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
export const ACQUIRE_LUA = `
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
export const RELEASE_LUA = `
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
  ${PROMOTE_NEXT_LUA}
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
export const ABANDON_LUA = `
local meta, queue, runs, released = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local runId, ttl = ARGV[1], ARGV[2]
if redis.call('HEXISTS', released, runId) == 1 then return {0, ''} end
local nextRun = ''
if redis.call('HGET', meta, 'activeRunId') == runId then
  ${PROMOTE_NEXT_LUA}
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
export const DELETE_LUA = `
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
export const FORGET_RUN_LUA = `
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
export const SEED_LUA = `
local ttl = ARGV[1]
if redis.call('EXISTS', KEYS[5]) == 1 or redis.call('EXISTS', KEYS[6]) == 1 then return 0 end
for i = 3, #ARGV do redis.call('RPUSH', KEYS[5], ARGV[i]) end
redis.call('SET', KEYS[6], ARGV[2])
${THREAD_TTL_LUA}
return 1
`;

export type ThreadAcquire = LuaScript<
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
export type ThreadRelease = LuaScript<
  ThreadDataKeys,
  [runId: string, setState: '1' | '0', stateJson: string, ttl: number, ...messages: string[]],
  [number, string]
>;
export type ThreadAbandon = LuaScript<
  ThreadDataKeys,
  [runId: string, ttl: number],
  [number, string]
>;
export type ThreadDelete = LuaScript<ThreadDataKeys, [], string[]>;
export type ThreadSeed = LuaScript<
  ThreadDataKeys,
  [ttl: number, stateJson: string, ...messages: string[]],
  number
>;
export type ThreadForgetRun = LuaScript<
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
export const HISTORY_LUA = `${WINDOW_LUA}
local expected = tonumber(ARGV[1])
local n = redis.call('LLEN', KEYS[1])
if expected > 0 and n >= expected and redis.call('HEXISTS', KEYS[3], 'fgen') == 0 then
  return {'same', redis.call('LINDEX', KEYS[1], -1), redis.call('GET', KEYS[2])}
end
local length, entries = window_of(KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
return {'all', entries, redis.call('GET', KEYS[2]), length}`;
export type ThreadHistory = LuaScript<
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
export const LOAD_FOR_RUN_LUA = `${WINDOW_LUA}
local n, entries = window_of(KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]))
local meta = redis.call('HMGET', KEYS[1], 'activeRunId', 'fgen')
return {meta[1], meta[2], n, entries, redis.call('GET', KEYS[6]),
  redis.call('LRANGE', KEYS[2], 0, -1), redis.call('ZRANGE', KEYS[3], 0, -1)}`;
export type ThreadLoadForRun = LuaScript<
  ThreadDataKeys,
  [windowMessages: number, windowBytes: number],
  [string | null, string | null, number, string[], string | null, string[], string[]]
>;
