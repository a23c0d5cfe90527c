import { RECORD_RESULT } from './functions.ts';

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
 * KEYS: results, cp   ARGV: field
 * Reply: {onRecord} | {false, data|false, version|false}
 */
export const LOOKUP_LUA = `
local onRecord = redis.call('HGET', KEYS[1], ARGV[1])
if onRecord then return {onRecord} end
local state = redis.call('HMGET', KEYS[2], 'data', 'version')
return {false, state[1], state[2]}`;
