/**
 * Lua functions shared by the run-record scripts: each script that uses one prepends its source
 * (`${GUARD_WRITE}` before the script's body), so every piece of shared logic takes its inputs as
 * parameters and hands its outputs back, instead of reading and setting the enclosing script's
 * variables. A script's command name derives from its whole source (see command-name.ts), so a
 * change here renames every script that includes it.
 */
import { JOB_HOLDER_FIELD, JOB_STALLS_FIELD } from '../../internals/bullmq/job-hash.ts';

/**
 * A job attempt's holder note (stall-accounting.ts), written by the script the attempt sends
 * first instead of a round trip of its own. Only on a single Redis: the job's hash lives in its
 * queue's hash slot, not the run's, so on a Cluster the note keeps its own script. A job that is
 * gone is left alone (no stray hash).
 */
export const NOTE_HOLDER = `
local function note_holder(job, holder, stalls)
  if redis.call('EXISTS', job) == 1 then
    redis.call('HSET', job, '${JOB_STALLS_FIELD}', stalls, '${JOB_HOLDER_FIELD}', holder)
  end
end
`;

/**
 * The guards every write to an existing run passes, in this order, so a caller learns the most
 * useful reason: the run is gone (-1), finished (-3: a done run takes no event at all), the
 * writer's lease is not the current one (-2: fencing; fence '' = an unfenced control-plane write
 * such as a decision).
 * Returns: refusal reply ({code, actualVersion}) | nil, current version, env (the run's envelope
 * ids, written once at create), hist (the run's thread-history reference, history-reference.ts;
 * false = none). The caller returns the refusal as its own reply.
 */
export const GUARD_WRITE = `
local function guard_write(cp, lease, fence)
  local guarded = redis.call('HMGET', cp, 'version', 'status', 'env', 'hist')
  local current = guarded[1]
  if not current then return {-1, -1} end
  current = tonumber(current)
  if guarded[2] == 'done' then return {-3, current} end
  if fence ~= '' and redis.call('GET', lease) ~= fence then return {-2, current} end
  return nil, current, guarded[3], guarded[4]
end
`;

/**
 * Writes the run's messages list from argv[from .. from + nmsg - 1]: mode 'replace' writes it
 * anew, 'append' adds them after the `base` messages it expects stored.
 * Returns: the index in argv of the first argument after the messages | nil when an append finds
 * another count stored (a run written before messages had their own list): nothing is written
 * and the caller replies -4, so the writer resends the whole list.
 */
export const WRITE_MESSAGES = `
local function write_messages(msgs, mode, base, argv, from, nmsg)
  if mode == 'append' and redis.call('LLEN', msgs) ~= base then return nil end
  if mode == 'replace' then redis.call('DEL', msgs) end
  local i = from
  while i < from + nmsg do
    local last = math.min(i + 999, from + nmsg - 1)
    redis.call('RPUSH', msgs, unpack(argv, i, last))
    i = last + 1
  end
  return from + nmsg
end
`;

/** argv[first..] as a table (the event bodies, after every other argument). */
export const ARGS_FROM = `
local function args_from(argv, first)
  local list = {}
  for i = first, #argv do list[#list + 1] = argv[i] end
  return list
end
`;

/**
 * Appends events. Each body arrives as its JSON without the leading '{' and is glued to the
 * envelope (`env`: the run's ids as JSON members, `at`: the time as JSON) by string
 * concatenation: decoding and re-encoding with cjson would turn empty arrays into objects.
 * The events of one write are one stream entry (id 0-<last seq>) and one SPUBLISH: a single event
 * as its JSON object, several as a JSON array. Sharded pub/sub (Redis 7): the channel carries the
 * run's hash tag, so on a Redis Cluster the message stays on the node that owns the run instead
 * of crossing the cluster bus to every node (standalone Redis treats it as PUBLISH). So a write costs the same few commands whatever
 * its number of events, subscribers see exactly the durable order and nothing that was not
 * stored, and a reader resuming after seq k reads from the entry whose last seq is > k.
 * With `echo`, each event's JSON is appended to the table `out` (the caller's reply).
 * Returns: the seq of the last event appended (0 when there were none).
 */
export const APPEND_EVENTS = `
local function append_events(cp, stream, channel, env, at, bodies, out, echo)
  local n = #bodies
  if n == 0 then return 0 end
  local last = redis.call('HINCRBY', cp, 'seq', n)
  local parts = {}
  for i = 1, n do
    local json = '{"seq":' .. (last - n + i) .. ',' .. env .. ',"at":' .. at .. ',' .. bodies[i]
    parts[i] = json
    if echo then out[#out + 1] = json end
  end
  local payload = parts[1]
  if n > 1 then payload = '[' .. table.concat(parts, ',') .. ']' end
  redis.call('XADD', stream, '0-' .. last, 'e', payload)
  redis.call('SPUBLISH', channel, payload)
  return last
end
`;

/**
 * A finished run keeps every key for `retention` seconds: EXPIRE on the first (up to 8) of
 * `keys`, the run's own keys in the calling script's order (create: RunDataKeys; commit: cp,
 * events, lease, pending, messages, results, parent, failed; a key after those, such as the
 * webhook configuration, is not the run's data and keeps its own expiry), except the positions
 * in `gone` (keys the script knows do not exist: their EXPIRE would do nothing).
 */
export const EXPIRE_RUN = `
local function expire_run(keys, gone, retention)
  for i = 1, math.min(#keys, 8) do
    if not gone[i] then redis.call('EXPIRE', keys[i], retention) end
  end
end
`;

/**
 * Records a tool result in the run's mailbox, first writer wins (a tool job that runs twice
 * yields one result). The mailbox of a live run never expires: a result may wait for its pass as
 * long as the run lives (a sibling call waiting for a human, a worker outage, a long deploy), and
 * one that expired made its call run again. `persist` also clears the TTL an earlier release set
 * on every record. The mailbox of a finished run (its commit gave every key the retention: NX
 * keeps that) or of a run that is gone (a late child delivery, a stray tool job) expires after
 * `ttlSeconds`, so nothing is left behind.
 * Returns: false when this one was recorded | the result already on record.
 */
export const RECORD_RESULT = `
local function record_result(results, cp, field, json, ttlSeconds)
  if redis.call('HSETNX', results, field, json) == 1 then
    local status = redis.call('HGET', cp, 'status')
    if status and status ~= 'done' then
      redis.call('PERSIST', results)
    else
      redis.call('EXPIRE', results, ttlSeconds, 'NX')
    end
    return false
  end
  return redis.call('HGET', results, field)
end
`;

/**
 * Takes the run's lease when free; otherwise leaves the "asked for while leased" mark, which
 * outlives the lease (`markTtl`) so a holder that crashes still leaves it for the next one.
 * Returns: true taken | false busy (mark left).
 */
export const TAKE_LEASE = `
local function take_lease(lease, pending, token, ttl, markTtl)
  if redis.call('SET', lease, token, 'NX', 'PX', ttl) then return true end
  redis.call('SET', pending, '1', 'PX', markTtl)
  return false
end
`;

/**
 * Releases the lease when `token` still holds it, and clears the mark.
 * Returns: -1 not ours (nothing done) | 1 released, someone asked meanwhile | 0 released.
 */
export const RELEASE_LEASE = `
local function release_lease(lease, pending, token)
  if redis.call('GET', lease) ~= token then return -1 end
  redis.call('DEL', lease)
  if redis.call('DEL', pending) == 1 then return 1 end
  return 0
end
`;
