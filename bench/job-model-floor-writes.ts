/**
 * What the job-model floor (job-model-floor.ts) writes: its Lua scripts, one round trip each, and
 * payloads of the sizes Baton writes for the bench agent.
 */
import type { Redis } from 'ioredis';

/** Bytes Baton writes for the bench agent (MONITOR of one run), by what the write is. */
export const SIZES = {
  checkpoint: { create: 700, start: 750, called: 1080, applied: 1160, final: 730 },
  events: { create: 220, start: 670, applied: 1460, called: 1380, final: 1010 },
  message: { input: 80, called: 200, result: 146, final: 103 },
  toolResult: 145,
};

export const CREATE = `
redis.call('HSET', KEYS[1], 'version', 1, 'data', ARGV[1], 'awaiting', '')
redis.call('RPUSH', KEYS[2], ARGV[2])
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('XADD', KEYS[3], '0-' .. seq, 'e', ARGV[3])
redis.call('SPUBLISH', KEYS[4], ARGV[3])
return seq`;

// KEYS: lease, cp, messages, results. ARGV: token, ttl.
export const ACQUIRE = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
local cp = redis.call('HMGET', KEYS[2], 'data', 'version', 'awaiting')
local messages = redis.call('LRANGE', KEYS[3], 0, -1)
local results = {}
if cp[3] and cp[3] ~= '' then
  local fields = {}
  for f in string.gmatch(cp[3], '%S+') do fields[#fields + 1] = f end
  results = redis.call('HMGET', KEYS[4], unpack(fields))
end
return { cp[1], cp[2], messages, results }`;

// KEYS: cp, lease, messages, events, channel. ARGV: token, version, data, awaiting, events,
// event count, release ('1'), messages to append...
export const COMMIT = `
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return false end
if #ARGV > 7 then redis.call('RPUSH', KEYS[3], unpack(ARGV, 8)) end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'data', ARGV[3], 'awaiting', ARGV[4])
local seq = redis.call('HINCRBY', KEYS[1], 'seq', tonumber(ARGV[6]))
redis.call('XADD', KEYS[4], '0-' .. seq, 'e', ARGV[5])
redis.call('SPUBLISH', KEYS[5], ARGV[5])
if ARGV[7] == '1' then redis.call('DEL', KEYS[2]) end
return seq`;

export const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

// KEYS: the job's hash. ARGV: holder, stalls. What Baton's stall accounting writes per attempt.
export const HOLDER_NOTE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'floorStalls', ARGV[2], 'floorHolder', ARGV[1])
return 1`;

export interface FloorRedis extends Redis {
  floorNote(...args: (string | number)[]): Promise<number>;
  floorCreate(...args: (string | number)[]): Promise<number>;
  floorAcquire(...args: (string | number)[]): Promise<[string, string, string[], string[]] | null>;
  floorCommit(...args: (string | number)[]): Promise<number | null>;
  floorRelease(...args: (string | number)[]): Promise<number>;
}

export interface Call {
  readonly id: string;
  readonly status: 'running' | 'done';
}

export interface Checkpoint {
  readonly runId: string;
  readonly step: number;
  readonly status: 'queued' | 'running' | 'done';
  readonly calls: Record<string, Call>;
  /** Filler up to the size Baton's checkpoint has at this point of the run. */
  readonly state: string;
}

export interface StepData {
  readonly v: 1;
  readonly kind: 'step';
  readonly runId: string;
  readonly tenantId: string;
  readonly agent: string;
  readonly reason: 'start';
  readonly expectedVersion: number;
}

export interface ToolData {
  readonly v: 1;
  readonly kind: 'tool';
  readonly runId: string;
  readonly tenantId: string;
  readonly agent: string;
  readonly step: number;
  readonly toolCallId: string;
  readonly attempt: number;
}

/** JSON of about `bytes` bytes: `body` padded with a filler field. */
export function sized(body: Record<string, unknown>, bytes: number): string {
  const bare = JSON.stringify({ ...body, pad: '' });
  return JSON.stringify({ ...body, pad: 'x'.repeat(Math.max(0, bytes - bare.length)) });
}

export function checkpoint(cp: Omit<Checkpoint, 'state'>, bytes: number): string {
  const bare = JSON.stringify({ ...cp, state: '' });
  return JSON.stringify({ ...cp, state: 'x'.repeat(Math.max(0, bytes - bare.length)) });
}

/** A commit's events, as one JSON array (what goes to the stream and the channel). */
export function events(runId: string, types: readonly string[], bytes: number): string {
  const each = Math.floor(bytes / types.length);
  return `[${types.map((type) => sized({ runId, type, at: Date.now() }, each - 1)).join(',')}]`;
}
