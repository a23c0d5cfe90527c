import { APPEND_EVENTS, ARGS_FROM, EXPIRE_RUN, GUARD_WRITE, WRITE_MESSAGES } from './functions.ts';

/**
 * Creates a run.
 * KEYS: cp, events, lease, pending, results, parent, failed, messages (RunDataKeys)
 * ARGV: channel, data (without messages), status, tenant, agent, threadId, createdAt, updatedAt,
 *       env, at, retention, activity, messages token (names this list: see 'mepoch'), hist (the
 *       thread-history reference, history-reference.ts; '' = none: the list holds every message),
 *       nmsg, messageJson × nmsg (from historyLength on when referenced), bodies…
 * Reply: {1, 1, eventJson…} | {0, actualVersion}
 *      | {2, 1, payload|nil} this very create, sent again (see below): payload is its stream entry
 * A run whose list still has this create's name (the token is drawn per call) was made by this
 * call: ioredis re-sends a command whose reply a dropped connection lost, though Redis ran it,
 * and the caller must hear "created", not "exists" (it would release the new run's thread).
 */
export const CREATE_LUA = `${WRITE_MESSAGES}${ARGS_FROM}${APPEND_EVENTS}${EXPIRE_RUN}
local cp, stream, msgs = KEYS[1], KEYS[2], KEYS[8]
local existing = redis.call('HMGET', cp, 'version', 'mepoch')
local current = existing[1]
if current then
  if existing[2] == ARGV[13] then
    local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
    if first then return {2, 1, first[2][2]} end
    return {2, 1}
  end
  return {0, tonumber(current)}
end
-- a stream without a checkpoint is a leftover (cannot happen unless keys were deleted by hand)
redis.call('DEL', stream)
local channel, env, at, retention = ARGV[1], ARGV[9], ARGV[10], ARGV[11]
local first = write_messages(msgs, 'replace', 0, ARGV, 17, tonumber(ARGV[16]))
local status = ARGV[3]
redis.call('HSET', cp, 'version', 1, 'seq', 0, 'data', ARGV[2], 'status', ARGV[3], 'tenant', ARGV[4],
  'agent', ARGV[5], 'threadId', ARGV[6], 'createdAt', ARGV[7], 'updatedAt', ARGV[8], 'env', env,
  'lastTrigger', '', 'activity', ARGV[12], 'awaiting', '[]', 'mepoch', ARGV[13])
if ARGV[14] ~= '' then redis.call('HSET', cp, 'hist', ARGV[14]) end
if ARGV[15] ~= '' then redis.call('HSET', cp, 'aver', ARGV[15]) end
local out = {1, 1}
append_events(cp, stream, channel, env, at, args_from(ARGV, first), out, true)
if status == 'done' then expire_run(KEYS, {}, retention) end
return out
`;

/**
 * Commits a new version of a run (compare-and-set on 'version', fenced on the lease).
 * KEYS: cp, events, lease, pending, messages, then either parent (a commit that records the
 *       round's parent job) or, for a commit that finishes the run (status 'done'), results,
 *       parent, failed, webhook: only that commit touches them (retention, the failed jobs, whether
 *       the run has webhooks), so the others do not send their names.
 * ARGV: expectedVersion, fence ('' = unfenced), data (without messages), status, activity,
 *       updatedAt, trigger ('' = none), awaiting (JSON array of the mailbox fields of the running
 *       calls, read back by the lease acquire), at, retention, release ('' = keep the lease; else
 *       the lease TTL in ms: release it after the commit unless someone asked for the run
 *       meanwhile, in which case the mark is cleared and the lease renewed; a commit that
 *       finishes the run deletes the lease and the mark whoever holds them), messages token
 *       (the list's new name when it is replaced), messages mode ('append' the new ones after
 *       the first `base` messages of the checkpoint | 'replace' all: a run that referenced its
 *       thread's history then holds all of it, the reference is dropped), base, parent record ('' = none: the step job about to
 *       wait for this round's tool jobs, written with the calls that make them), nmsg,
 *       messageJson × nmsg, bodies…
 * 'mepoch' names a run's message list: set at create and whenever the list is written anew, never
 * on an append, so a reader that kept the first n messages of a list with that name can read only
 * the rest (the lease's acquire-and-load).
 * The run's pub/sub channel is its key base + ':ch' (BatonKeys.run), derived from the cp key.
 * Reply: {1, newVersion, released (1 released | 0 kept | -1 not asked), lastSeq,
 *         failedJobs, webhook (1 the run has a webhook configuration | 0; both only when the
 *         run is done now)}
 *      | {code, actualVersion} (codes: see guard_write; -4 see write_messages)
 */
export const COMMIT_LUA = `${GUARD_WRITE}${WRITE_MESSAGES}${ARGS_FROM}${APPEND_EVENTS}${EXPIRE_RUN}
local cp, stream, lease, fence, msgs = KEYS[1], KEYS[2], KEYS[3], ARGV[2], KEYS[5]
local refusal, current, env, hist = guard_write(cp, lease, fence)
if refusal then return refusal end
if current ~= tonumber(ARGV[1]) then return {0, current} end
local status = ARGV[4]
if status == 'done' and #KEYS < 9 then
  return redis.error_reply('commit: a commit that finishes the run takes all of its keys')
end
if ARGV[15] ~= '' and #KEYS ~= 6 and #KEYS ~= 9 then
  return redis.error_reply('commit: a parent record needs the parent key')
end
local version = current + 1
local channel = string.sub(cp, 1, -4) .. ':ch'
local at, retention = ARGV[9], ARGV[10]
local mode = ARGV[13]
-- The list holds the checkpoint's messages after the referenced history (history-reference.ts).
local base = tonumber(ARGV[14])
if hist and mode == 'append' then base = base - tonumber(string.match(hist, '^%d+')) end
local first = write_messages(msgs, mode, base, ARGV, 17, tonumber(ARGV[16]))
if not first then return {-4, current} end
-- A list written anew gets a new name: what a reader kept of the old one is not a prefix of it.
if mode == 'replace' then
  redis.call('HSET', cp, 'mepoch', ARGV[12])
  if hist then redis.call('HDEL', cp, 'hist') end
end
redis.call('HSET', cp, 'version', version, 'data', ARGV[3], 'status', status, 'activity', ARGV[5],
  'updatedAt', ARGV[6], 'lastTrigger', ARGV[7], 'awaiting', ARGV[8])
local released, gone = -1, {}
if status == 'done' then
  -- A finished run holds no lease and no mark, whoever held them (an unfenced write ends a run
  -- under a holder's feet): kept, the retention EXPIRE below would stretch them to a day, and
  -- any job of the run that met them would wait for them. Every later write to the run is
  -- refused anyway (guard_write), and a finished run needs no other pass.
  redis.call('DEL', lease, KEYS[4])
  gone[3], gone[4] = true, true
  if ARGV[11] ~= '' and fence ~= '' then released = 1 end
elseif ARGV[11] ~= '' and fence ~= '' then
  gone[4] = true
  if redis.call('DEL', KEYS[4]) == 1 then
    redis.call('PEXPIRE', lease, ARGV[11])
    released = 0
  else
    redis.call('DEL', lease)
    released = 1
    gone[3] = true
  end
end
-- The events are not sent back: the caller has their bodies and rebuilds them from lastSeq.
local out = {1, version, released}
out[4] = append_events(cp, stream, channel, env, at, args_from(ARGV, first), out, false)
-- A finished run's failed tool jobs are removed by its clean-up: it gets their ids from here.
if status == 'done' then
  out[5] = redis.call('SMEMBERS', KEYS[8])
  if #out[5] == 0 then gone[8] = true end
  out[6] = redis.call('EXISTS', KEYS[9])
end
-- One day, like the record a fan-out writes itself (fan-out.ts): a round never lasts longer.
if ARGV[15] ~= '' then redis.call('SET', KEYS[#KEYS == 6 and 6 or 7], ARGV[15], 'PX', 86400000) end
if status == 'done' then expire_run(KEYS, gone, retention) end
return out
`;

/**
 * Events outside a commit (text deltas): fenced on the lease, never on the version, so a decision
 * committed meanwhile does not interrupt a stream, while a writer that lost its lease is refused
 * and nothing lands after run.finished. The envelope ids come from the stored checkpoint.
 * `marker` ('<step>:<nonce>') names the inference attempt; the first append of a new attempt of
 * a step that already streamed deltas emits `resetBody` first (clients drop the old deltas).
 * `index` is the append's place among its attempt's appends (0, 1, …): the hash keeps how many
 * of the current attempt's appends it holds ('streamed'), and an append it already holds is a
 * command sent again (ioredis re-sends what was unanswered when a connection dropped, though
 * Redis may have run it): it writes nothing and answers as written. An index past 'streamed'
 * (earlier appends lost with a Redis crash) is written: deltas are lost, never doubled.
 * KEYS: cp, events, lease
 * ARGV: channel, fence, at, marker, stepPrefix, resetBody ('' = none), index, bodies…
 * Reply: {1, version, eventJson…} | {code, actualVersion} (codes: see guard_write)
 */
export const APPEND_LUA = `${GUARD_WRITE}${APPEND_EVENTS}
local cp, stream, lease, fence = KEYS[1], KEYS[2], KEYS[3], ARGV[2]
if fence == '' then return redis.error_reply('append needs a fencing token') end
local refusal, current, env, hist = guard_write(cp, lease, fence)
if refusal then return refusal end
local channel, at, marker, stepPrefix, resetBody = ARGV[1], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local index = tonumber(ARGV[7])
local out = {1, current}
local bodies = {}
local previous = redis.call('HMGET', cp, 'stream', 'streamed')
if previous[1] == marker then
  if index < tonumber(previous[2] or '0') then return out end
else
  redis.call('HSET', cp, 'stream', marker)
  if previous[1] and resetBody ~= '' and string.sub(previous[1], 1, #stepPrefix) == stepPrefix then
    bodies[1] = resetBody
  end
end
redis.call('HSET', cp, 'streamed', index + 1)
for i = 8, #ARGV do bodies[#bodies + 1] = ARGV[i] end
append_events(cp, stream, channel, env, at, bodies, out, true)
return out
`;

/**
 * Deletes a finished run's keys (DELETE /v1/runs/:id). A run that is not done is refused: its
 * workers would recreate what was deleted.
 * KEYS: cp, events, lease, pending, results, parent, failed, messages (RunDataKeys)
 * ARGV: tenant
 * Reply: 1 deleted | 0 no such run (or another tenant's) | -1 not done
 */
export const DELETE_LUA = `
local tenant = redis.call('HGET', KEYS[1], 'tenant')
if not tenant or tenant ~= ARGV[1] then return 0 end
if redis.call('HGET', KEYS[1], 'status') ~= 'done' then return -1 end
redis.call('DEL', unpack(KEYS))
return 1
`;
