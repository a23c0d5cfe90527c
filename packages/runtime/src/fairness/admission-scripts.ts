import {
  defineScript,
  defineVariadicScript,
  type LuaScript,
  type RedisClient,
} from '../redis/scripts.ts';

/**
 * The admission scripts. Every key is one tenant's (hash tag `{fair:<tenant>}`, see
 * fairness-keys.ts), so each script is atomic on a Redis Cluster too. A run's own keys live in
 * another slot: admission is one script here, then the run's job; a crash in between leaves an
 * admitted run without a job, which the reconciler gives one (it does for any active run).
 *
 * Layout: `where` HASH runId -> "a\t<key>" (admitted: holds a slot) | "p\t<key>" (parked in
 * the key's backlog); `busy` HASH key -> runs in progress, "*" -> the tenant's; `queue` ZSET the
 * key's backlog, score = priority × 1e13 + arrival ms; `keys` SET keys with a backlog;
 * `dispatched` HASH "*" -> the tenant's runs admitted since ever, key -> the same for a tracked
 * key only (FairnessPolicy.tracked: keys the operator named, never one a tenant invents).
 * Nothing else is kept per key once it is idle: `busy` fields, backlogs and `keys` members go
 * with the key's last run. Borrowing (docs/fairness.md): `where` "b\t<key>" is a run admitted past
 * its windows into the pool's idle capacity; it counts in no `busy` field (so it never holds back
 * another key's in-window run) but in `borrow` HASH `runs`; `borrow` `limit` is how many runs of
 * the tenant may be in progress, borrowed ones included, as the last admission computed it from
 * the live pool (absent: no borrowing). A release before borrowing reads "b\t" as parked: its
 * release script deletes the entry (leaving `runs` one too high, which only /metrics shows) and
 * its sweep gives it back when the run ends, so a mixed fleet leaks nothing that holds runs back.
 *
 * Contract across releases: the layout is shared; each release calls its own scripts (their names
 * carry their source's hash, command-name.ts), so an old and a new process running side by side
 * each run the version they know on the same data. What the previous release's scripts do that
 * these do not (a `dispatched` field for every key, no tenant window by default) only makes the
 * old process admit beyond the tenant window, and leave `dispatched` fields that the new sweep
 * deletes; `busy`, `where`, the backlogs and `keys` mean the same to both.
 */

/**
 * Admits a run if nothing of its key is ahead of it and both limits allow, else parks it (once;
 * a parked run asking again keeps its place).
 * Over a window, with nothing of the tenant parked but this key's runs behind it, it borrows when
 * the tenant's runs in progress (borrowed ones included) are below borrowLimit.
 * KEYS: where, busy, queue, keys, dispatched, borrow
 * ARGV: runId, key, score, keyLimit (-1: none), tenantLimit (-1: none), tracked (1: count the
 *   key's dispatches on its own), borrowLimit (-1: no borrowing; stored for the fill script)
 * Reply: {1} admitted (now or before) | {2} borrowed | {0, reason, position, backlog, inProgress}
 *   reason: 1 key limit, 2 tenant limit, 3 behind the key's backlog
 */
const ADMIT_LUA = `
local where, busy, queue, keys, disp = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local borrow = KEYS[6]
local runId, key, score = ARGV[1], ARGV[2], ARGV[3]
local keyLimit, tenantLimit, tracked = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
local borrowLimit = tonumber(ARGV[7])
if borrowLimit >= 0 then redis.call('HSET', borrow, 'limit', borrowLimit)
else redis.call('HDEL', borrow, 'limit') end
local st = redis.call('HGET', where, runId)
if st and string.sub(st, 1, 2) ~= 'p\t' then return {1} end
local inKey = tonumber(redis.call('HGET', busy, key) or '0')
local total = tonumber(redis.call('HGET', busy, '*') or '0')
local ahead
if st then ahead = redis.call('ZRANK', queue, runId) or 0
else ahead = redis.call('ZCOUNT', queue, '-inf', '(' .. score) end
local keyFull = keyLimit >= 0 and inKey >= keyLimit
local tenantFull = tenantLimit >= 0 and total >= tenantLimit
if ahead == 0 and not keyFull and not tenantFull then
  redis.call('HSET', where, runId, 'a\t' .. key)
  redis.call('HINCRBY', busy, key, 1)
  redis.call('HINCRBY', busy, '*', 1)
  redis.call('HINCRBY', disp, '*', 1)
  if tracked then redis.call('HINCRBY', disp, key, 1) end
  if st then
    redis.call('ZREM', queue, runId)
    if redis.call('ZCARD', queue) == 0 then redis.call('SREM', keys, key) end
  end
  return {1}
end
local others = redis.call('SCARD', keys) - redis.call('SISMEMBER', keys, key)
if ahead == 0 and borrowLimit >= 0 and others == 0
  and redis.call('HLEN', where) - redis.call('ZCARD', queue) < borrowLimit then
  redis.call('HSET', where, runId, 'b\t' .. key)
  redis.call('HINCRBY', borrow, 'runs', 1)
  redis.call('HINCRBY', disp, '*', 1)
  if tracked then redis.call('HINCRBY', disp, key, 1) end
  if st then
    redis.call('ZREM', queue, runId)
    if redis.call('ZCARD', queue) == 0 then redis.call('SREM', keys, key) end
  end
  return {2}
end
if not st then
  redis.call('ZADD', queue, score, runId)
  redis.call('HSET', where, runId, 'p\t' .. key)
  redis.call('SADD', keys, key)
end
local reason = 3
if keyFull then reason = 1 elseif tenantFull then reason = 2 end
return {0, reason, (redis.call('ZRANK', queue, runId) or 0) + 1, redis.call('ZCARD', queue), inKey}
`;

/**
 * Gives back the run's slot, or takes it out of its key's backlog (idempotent).
 * KEYS: where, busy, queue, keys, borrow
 * ARGV: runId, key
 * Reply: 1 a slot was given back | 2 left the backlog | 3 a borrowed run ended | 0 it held neither
 */
const RELEASE_LUA = `
local where, busy, queue, keys, borrow = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local runId, key = ARGV[1], ARGV[2]
local st = redis.call('HGET', where, runId)
if not st then return 0 end
redis.call('HDEL', where, runId)
if string.sub(st, 1, 2) == 'b\t' then
  if redis.call('HINCRBY', borrow, 'runs', -1) <= 0 then redis.call('HDEL', borrow, 'runs') end
  return 3
end
if string.sub(st, 1, 2) == 'a\t' then
  local held = string.sub(st, 3)
  for _, f in ipairs({held, '*'}) do
    if redis.call('HINCRBY', busy, f, -1) <= 0 then redis.call('HDEL', busy, f) end
  end
  return 1
end
redis.call('ZREM', queue, runId)
if redis.call('ZCARD', queue) == 0 then redis.call('SREM', keys, key) end
return 2
`;

/**
 * Admits the head run of the candidate key furthest below its weighted share (fewest runs in
 * progress per weight, read here, atomically: two fills racing on stale counts would both give
 * their slot to the same key), if the tenant's limit and that key's window allow.
 * When none can, and a single key of the tenant has a backlog, its head borrows if the tenant's
 * runs in progress (borrowed included) are below `borrow`'s `limit` (see the admit script).
 * KEYS: where, busy, keys, dispatched, borrow, then the candidates' backlogs (queue of key i =
 *   KEYS[5+i])
 * ARGV: tenantLimit (-1: none), then per candidate: key, weight, keyLimit (-1: none), tracked
 *   (1: count the key's dispatches on its own)
 * Reply: {1} the tenant's limit is reached | {0} no candidate can take a run (at its window or
 *   without a backlog) | {0, i, runId} candidate i's head was admitted (or borrowed)
 */
const FILL_LUA = `
local where, busy, keys, disp, borrow = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tenantLimit = tonumber(ARGV[1])
local total = tonumber(redis.call('HGET', busy, '*') or '0')
local tenantFull = tenantLimit >= 0 and total >= tenantLimit
local best, bestLoad
if not tenantFull then
  for i = 1, #KEYS - 5 do
    local a = 2 + (i - 1) * 4
    local key, weight, keyLimit = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    local inKey = tonumber(redis.call('HGET', busy, key) or '0')
    if (keyLimit < 0 or inKey < keyLimit) and redis.call('ZCARD', KEYS[5 + i]) > 0 then
      local load = inKey / weight
      if not best or load < bestLoad then best, bestLoad = i, load end
    end
  end
end
if not best then
  local limit = tonumber(redis.call('HGET', borrow, 'limit') or '-1')
  if limit >= 0 and redis.call('SCARD', keys) == 1 then
    for i = 1, #KEYS - 5 do
      local queue = KEYS[5 + i]
      local n = redis.call('ZCARD', queue)
      if n > 0 and redis.call('HLEN', where) - n < limit then
        local a = 2 + (i - 1) * 4
        local key = ARGV[a]
        local head = redis.call('ZRANGE', queue, 0, 0)[1]
        redis.call('ZREM', queue, head)
        redis.call('HSET', where, head, 'b\t' .. key)
        redis.call('HINCRBY', borrow, 'runs', 1)
        redis.call('HINCRBY', disp, '*', 1)
        if ARGV[a + 3] == '1' then redis.call('HINCRBY', disp, key, 1) end
        if n == 1 then redis.call('SREM', keys, key) end
        return {0, i, head}
      end
    end
  end
  if tenantFull then return {1} end
  return {0}
end
local a = 2 + (best - 1) * 4
local key, queue = ARGV[a], KEYS[5 + best]
local head = redis.call('ZRANGE', queue, 0, 0)[1]
redis.call('ZREM', queue, head)
redis.call('HSET', where, head, 'a\t' .. key)
redis.call('HINCRBY', busy, key, 1)
redis.call('HINCRBY', busy, '*', 1)
redis.call('HINCRBY', disp, '*', 1)
if ARGV[a + 3] == '1' then redis.call('HINCRBY', disp, key, 1) end
if redis.call('ZCARD', queue) == 0 then redis.call('SREM', keys, key) end
return {0, best, head}
`;

export type FillReply = [1] | [0] | [0, number, string];

export type AdmitReply = [1] | [2] | [0, 1 | 2 | 3, number, number, number];

export interface AdmissionScripts {
  readonly admit: LuaScript<
    readonly [string, string, string, string, string, string],
    readonly [string, string, number, number, number, 0 | 1, number],
    AdmitReply
  >;
  readonly release: LuaScript<
    readonly [string, string, string, string, string],
    readonly [string, string],
    number
  >;
  readonly fill: LuaScript<readonly string[], readonly (string | number)[], FillReply>;
}

export function admissionScripts(redis: RedisClient): AdmissionScripts {
  return {
    admit: defineScript(redis, 'batonFairAdmit', 6, ADMIT_LUA),
    release: defineScript(redis, 'batonFairRelease', 5, RELEASE_LUA),
    fill: defineVariadicScript(redis, 'batonFairFill', FILL_LUA),
  };
}
