import { NOTE_HOLDER, RECORD_RESULT, RELEASE_LEASE, TAKE_LEASE } from './functions.ts';

/**
 * Takes the run's lease (single flight per run, fencing token = `token`), or leaves the pending
 * mark when another job holds it. The holder's job is noted in the checkpoint hash (`driver`,
 * '<queue>:<jobId>') so the reconciler can ask whether it is still alive.
 * KEYS: lease, pending, cp
 * ARGV: token, ttlMs, pendingTtlMs, driver ('' = none)
 * Reply: 1 acquired | 0 busy (mark left)
 */
export const ACQUIRE_LUA = `${TAKE_LEASE}
if take_lease(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]) then
  if ARGV[4] ~= '' and redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('HSET', KEYS[3], 'driver', ARGV[4])
  end
  return 1
end
return 0`;

/**
 * ACQUIRE_LUA, and on success the run's checkpoint and the results already recorded for its
 * running calls (the commit keeps their mailbox fields in `awaiting`, a JSON array; absent on
 * runs written before it existed), all in the same round trip. A tool job first records its own
 * result (`recordField` ≠ '': first writer wins, as in the mailbox) in the same script. With
 * `deferIfComplete` = '1' (a child job of a step job that BullMQ re-enters once its last child
 * finished) the lease is not even tried when every awaited call now has a result: the round is
 * over and that re-entry applies them all with its next round, in one commit.
 * The messages: a reader that kept the first `knownCount` messages of the list named
 * `knownName` (the run's 'mepoch', see COMMIT_LUA) gets only the ones after them, when the list
 * still has that name and at least that many; otherwise all of them (`from` says which).
 * With a sixth key (the job's hash; a single Redis only) the job attempt's holder note is written
 * first, whatever the outcome (NOTE_HOLDER).
 * KEYS: lease, pending, cp, messages, results[, job]
 * ARGV: token, ttlMs, pendingTtlMs, driver, recordField, recordJson, recordTtlSeconds,
 *       deferIfComplete, knownName ('' = none), knownCount[, holder, stalledCounter]
 * Reply: {1, data|false, version|false, {messageJson…}, onRecord|false, awaiting|false,
 *         {resultJson|false…}|false, name|false, from, hist|false, tenant|false,
 *         threadId|false} acquired (hist: the thread-history reference, history-reference.ts)
 *       | {0, onRecord|false} busy (mark left)
 *       | {2, onRecord|false} deferred (round complete, nothing taken)
 * `onRecord`: the result that was already on record when one was to be recorded.
 */
export const ACQUIRE_LOAD_LUA = `${RECORD_RESULT}${TAKE_LEASE}${NOTE_HOLDER}
if KEYS[6] then note_holder(KEYS[6], ARGV[11], ARGV[12]) end
local results = KEYS[5]
local onRecord = false
if ARGV[5] ~= '' then onRecord = record_result(results, KEYS[3], ARGV[5], ARGV[6], ARGV[7]) end
if ARGV[8] == '1' then
  local awaiting = redis.call('HGET', KEYS[3], 'awaiting')
  if awaiting then
    local fields = cjson.decode(awaiting)
    if #fields > 0 then
      local complete = true
      local recorded = redis.call('HMGET', results, unpack(fields))
      for i = 1, #fields do
        if not recorded[i] then complete = false end
      end
      if complete then return {2, onRecord} end
    end
  end
end
if take_lease(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]) then
  local state = redis.call('HMGET', KEYS[3], 'data', 'version', 'awaiting', 'mepoch', 'hist',
    'tenant', 'threadId')
  if ARGV[4] ~= '' and state[2] then
    redis.call('HSET', KEYS[3], 'driver', ARGV[4])
  end
  local recorded = false
  if state[3] then
    local fields = cjson.decode(state[3])
    if #fields > 0 then recorded = redis.call('HMGET', results, unpack(fields)) else recorded = {} end
  end
  local from = 0
  if ARGV[9] ~= '' and state[4] == ARGV[9] then
    from = tonumber(ARGV[10])
    -- shorter than what the reader kept: Redis lost a suffix (a restart from an older past)
    if redis.call('LLEN', KEYS[4]) < from then from = 0 end
  end
  local list = redis.call('LRANGE', KEYS[4], from, -1)
  return {1, state[1], state[2], list, onRecord, state[3], recorded, state[4], from, state[5],
    state[6], state[7]}
end
return {0, onRecord}`;

/**
 * KEYS: lease, pending   ARGV: token
 * Reply: -1 not ours | 1 released, someone asked | 0 released
 */
export const RELEASE_LUA = `${RELEASE_LEASE}
return release_lease(KEYS[1], KEYS[2], ARGV[1])`;

/**
 * RELEASE_LUA, and when someone asked for the run meanwhile, its stored checkpoint in the same
 * round trip: the caller must look at it to decide who carries the run on.
 * KEYS: lease, pending, cp, messages   ARGV: token
 * Reply: {-1} not ours | {0} released
 *      | {1, data|false, version|false, {messageJson…}, hist|false, tenant|false, threadId|false}
 *        released, asked
 */
export const RELEASE_READ_LUA = `${RELEASE_LEASE}
local released = release_lease(KEYS[1], KEYS[2], ARGV[1])
if released ~= 1 then return {released} end
local state = redis.call('HMGET', KEYS[3], 'data', 'version', 'hist', 'tenant', 'threadId')
return {1, state[1], state[2], redis.call('LRANGE', KEYS[4], 0, -1), state[3], state[4], state[5]}`;

/**
 * Releases only when nobody asked for the run meanwhile; otherwise clears the mark and keeps the
 * lease, so the holder makes one more pass itself instead of scheduling a job for it.
 * KEYS: lease, pending   ARGV: token, ttlMs
 * Reply: -1 not ours | 0 kept (look again) | 1 released
 */
export const RELEASE_IF_IDLE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('DEL', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 0
end
redis.call('DEL', KEYS[1])
return 1`;

/**
 * KEYS: lease   ARGV: token, ttlMs
 * Reply: 1 renewed | 0 not ours any more
 */
export const RENEW_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;
