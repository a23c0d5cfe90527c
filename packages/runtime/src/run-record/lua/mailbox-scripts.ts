import { NOTE_HOLDER, RECORD_RESULT } from './functions.ts';

/**
 * Records a tool result in the run's mailbox, first writer wins, in one round trip.
 * KEYS: results, cp   ARGV: field, resultJson, ttlSeconds (a finished or missing run's mailbox)
 * Reply: null recorded | the result on record
 */
export const RECORD_LUA = `${RECORD_RESULT}
return record_result(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])`;

/**
 * What a tool job needs before it runs its call, in one round trip: the result already on
 * record for the attempt (a redelivered job), else the run's checkpoint to run it from.
 * With a third key (the job's hash; a single Redis only) the attempt's holder note is written
 * first (NOTE_HOLDER).
 * KEYS: results, cp[, job]   ARGV: field[, holder, stalledCounter]
 * Reply: {onRecord} | {false, data|false, version|false}
 */
export const LOOKUP_LUA = `${NOTE_HOLDER}
if KEYS[3] then note_holder(KEYS[3], ARGV[2], ARGV[3]) end
local onRecord = redis.call('HGET', KEYS[1], ARGV[1])
if onRecord then return {onRecord} end
local state = redis.call('HMGET', KEYS[2], 'data', 'version')
return {false, state[1], state[2]}`;

/**
 * The checkpoint fields a tool job's first attempt reads (it can have recorded nothing yet), with
 * that attempt's holder note written in the same round trip (NOTE_HOLDER; a single Redis only).
 * KEYS: cp, job   ARGV: holder, stalledCounter
 * Reply: {data|false, version|false}
 */
export const READ_NOTED_LUA = `${NOTE_HOLDER}
note_holder(KEYS[2], ARGV[1], ARGV[2])
return redis.call('HMGET', KEYS[1], 'data', 'version')`;
