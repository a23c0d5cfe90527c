import type { RunPage, RunStatus, RunSummary, ScheduleFiring } from '@baton/protocol';
import { BatonKeys, type ScheduleKeys } from '../redis/keys.ts';
import { defineScript, type LuaScript, type RedisClient } from '../redis/scripts.ts';
import { RunBookkeeping } from '../run-record/run-bookkeeping.ts';
import type { ScheduleRecord, StoredSchedule } from './schedule-record.ts';
import { InvalidScheduleCursorError } from '../errors/invalid-schedule-cursor-error.ts';

/** Firings kept per schedule (GET shows the newest) and run ids kept in its run index. */
export const KEPT_FIRINGS = 100;
const KEPT_RUNS = 1_000;

/**
 * KEYS: record, index
 * ARGV: id, data, state, createdAt, maxPerTenant
 * Reply: {1, n} created | {0, n} exists | {-1, n} the tenant has maxPerTenant already (n = count)
 */
const CREATE_LUA = `
local n = redis.call('ZCARD', KEYS[2])
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, n} end
if n >= tonumber(ARGV[5]) then return {-1, n} end
redis.call('HSET', KEYS[1], 'version', 1, 'data', ARGV[2], 'state', ARGV[3], 'fired', 0)
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
return {1, n + 1}
`;

/**
 * KEYS: record
 * ARGV: expectedVersion, data, state
 * Reply: {1, newVersion} | {0, currentVersion} | {-1, 0} (gone)
 */
const UPDATE_LUA = `
local current = redis.call('HGET', KEYS[1], 'version')
if not current then return {-1, 0} end
current = tonumber(current)
if current ~= tonumber(ARGV[1]) then return {0, current} end
redis.call('HSET', KEYS[1], 'version', current + 1, 'data', ARGV[2], 'state', ARGV[3])
return {1, current + 1}
`;

/**
 * KEYS: record, firings, firing, runs, index
 * ARGV: id
 * Reply: 1 | 0 (missing)
 */
const DELETE_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[1])
return 1
`;

/**
 * Records one firing, once: the first record for an instant wins, a repeat is a no-op.
 * KEYS: record, firings, firing, runs
 * ARGV: scheduledFor, firingJson, runId ('' = none), firedAt, keptFirings, keptRuns
 * Reply: {1, fired} (recorded) | {0, fired} (already recorded) | {-1, 0} (schedule gone)
 */
const RECORD_FIRING_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local at = ARGV[1]
if redis.call('HEXISTS', KEYS[3], at) == 1 then
  return {0, tonumber(redis.call('HGET', KEYS[1], 'fired') or '0')}
end
redis.call('HSET', KEYS[3], at, ARGV[2])
redis.call('ZADD', KEYS[2], at, at)
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if extra > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], extra)
  -- one HDEL per 1,000 fields (unpack's stack limit), not one per field
  local fields = {}
  for i = 1, #old, 2 do
    fields[#fields + 1] = old[i]
    if #fields == 1000 or i + 2 > #old then
      redis.call('HDEL', KEYS[3], unpack(fields))
      fields = {}
    end
  end
end
if ARGV[3] ~= '' then
  redis.call('ZADD', KEYS[4], at, ARGV[3])
  redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -(tonumber(ARGV[6]) + 1))
end
local fired = redis.call('HINCRBY', KEYS[1], 'fired', 1)
local last = tonumber(redis.call('HGET', KEYS[1], 'lastScheduledFor') or '-1')
if tonumber(at) > last then redis.call('HSET', KEYS[1], 'lastScheduledFor', at) end
redis.call('HSET', KEYS[1], 'lastFiredAt', ARGV[4])
return {1, fired}
`;

type CreateScript = LuaScript<
  [record: string, index: string],
  [id: string, data: string, state: string, createdAt: number, maxPerTenant: number],
  [1 | 0 | -1, number]
>;
type UpdateScript = LuaScript<
  [record: string],
  [expectedVersion: number, data: string, state: string],
  [number, number]
>;
type DeleteScript = LuaScript<
  [record: string, firings: string, firing: string, runs: string, index: string],
  [id: string],
  number
>;
type RecordFiringScript = LuaScript<
  [record: string, firings: string, firing: string, runs: string],
  [
    scheduledFor: number,
    firingJson: string,
    runId: string,
    firedAt: number,
    keptFirings: number,
    keptRuns: number,
  ],
  [number, number]
>;

export type UpdateResult =
  | { readonly kind: 'updated'; readonly version: number }
  | { readonly kind: 'conflict'; readonly version: number }
  | { readonly kind: 'missing' };

export interface SchedulePageOf {
  readonly schedules: StoredSchedule[];
  readonly nextCursor: string | null;
}

function encodeCursor(score: number, id: string): string {
  return Buffer.from(JSON.stringify([score, id])).toString('base64url');
}

function decodeCursor(cursor: string): { score: number; id: string } {
  try {
    const [score, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[];
    if (typeof score === 'number' && typeof id === 'string') return { score, id };
  } catch {
    // fall through
  }
  throw new InvalidScheduleCursorError('cursor is invalid');
}

/**
 * Schedule records in Redis: one hash per schedule (versioned JSON record, firing counters),
 * its firing log and run index, and the tenant's index, all in the tenant's schedule slot so
 * creation and deletion change record and index together.
 */
export class RedisScheduleStore {
  readonly keys: BatonKeys;
  private readonly redis: RedisClient;
  private readonly createScript: CreateScript;
  private readonly updateScript: UpdateScript;
  private readonly deleteScript: DeleteScript;
  private readonly recordScript: RecordFiringScript;
  /** The fields of the schedule's runs (their keys are the run record's). */
  private readonly runRecord: RunBookkeeping;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
    this.runRecord = new RunBookkeeping(redis, keys);
    this.createScript = defineScript(redis, 'batonScheduleCreate', 2, CREATE_LUA);
    this.updateScript = defineScript(redis, 'batonScheduleUpdate', 1, UPDATE_LUA);
    this.deleteScript = defineScript(redis, 'batonScheduleDelete', 5, DELETE_LUA);
    this.recordScript = defineScript(redis, 'batonScheduleFiring', 4, RECORD_FIRING_LUA);
  }

  private k(tenantId: string, scheduleId: string): ScheduleKeys {
    return this.keys.schedule(tenantId, scheduleId);
  }

  private static member(tenantId: string, scheduleId: string): string {
    return JSON.stringify([tenantId, scheduleId]);
  }

  /**
   * Creates the record (false if the id exists). The global entry the repair sweep reads is
   * written first: a crash in between leaves an entry without a record, which the sweep drops.
   */
  /**
   * Creates the record unless the tenant has `maxPerTenant` schedules already (checked in the
   * same script, so concurrent creates cannot overshoot). `count`: the tenant's schedules.
   */
  async create(
    record: ScheduleRecord,
    maxPerTenant = Number.MAX_SAFE_INTEGER,
  ): Promise<{ kind: 'created' | 'exists' | 'over_limit'; count: number }> {
    const { tenantId, scheduleId } = record;
    await this.redis.zadd(
      this.keys.allSchedules,
      record.createdAt,
      RedisScheduleStore.member(tenantId, scheduleId),
    );
    const k = this.k(tenantId, scheduleId);
    const created = await this.createScript(
      [k.record, k.index],
      [scheduleId, JSON.stringify(record), record.state, record.createdAt, maxPerTenant],
    );
    const kind = created[0] === 1 ? 'created' : created[0] === 0 ? 'exists' : 'over_limit';
    return { kind, count: Number(created[1]) };
  }

  async load(tenantId: string, scheduleId: string): Promise<StoredSchedule | null> {
    const fields = await this.redis.hmget(
      this.k(tenantId, scheduleId).record,
      'version',
      'data',
      'fired',
      'lastScheduledFor',
      'lastFiredAt',
    );
    return decode(fields);
  }

  /** Compare-and-set of the record on its version. */
  async update(expectedVersion: number, record: ScheduleRecord): Promise<UpdateResult> {
    const k = this.k(record.tenantId, record.scheduleId);
    const [code, version] = await this.updateScript(
      [k.record],
      [expectedVersion, JSON.stringify(record), record.state],
    );
    if (code === 1) return { kind: 'updated', version };
    if (code === 0) return { kind: 'conflict', version };
    return { kind: 'missing' };
  }

  /**
   * Deletes the record, its firing log and run index (the runs themselves stay). The global entry
   * is removed by dropEntry once the job scheduler is gone too.
   */
  async delete(tenantId: string, scheduleId: string): Promise<boolean> {
    const k = this.k(tenantId, scheduleId);
    const deleted = await this.deleteScript(
      [k.record, k.firings, k.firing, k.runs, k.index],
      [scheduleId],
    );
    return deleted === 1;
  }

  async dropEntry(tenantId: string, scheduleId: string): Promise<void> {
    await this.redis.zrem(this.keys.allSchedules, RedisScheduleStore.member(tenantId, scheduleId));
  }

  /** Records a firing once; `recorded` is false when this instant was already recorded. */
  async recordFiring(
    tenantId: string,
    scheduleId: string,
    firing: ScheduleFiring,
  ): Promise<{ recorded: boolean; fired: number; missing: boolean }> {
    const k = this.k(tenantId, scheduleId);
    const [code, fired] = await this.recordScript(
      [k.record, k.firings, k.firing, k.runs],
      [
        firing.scheduledFor,
        JSON.stringify(firing),
        firing.runId ?? '',
        firing.firedAt,
        KEPT_FIRINGS,
        KEPT_RUNS,
      ],
    );
    return { recorded: code === 1, fired, missing: code === -1 };
  }

  async firing(
    tenantId: string,
    scheduleId: string,
    scheduledFor: number,
  ): Promise<ScheduleFiring | null> {
    const raw = await this.redis.hget(this.k(tenantId, scheduleId).firing, String(scheduledFor));
    return raw === null ? null : (JSON.parse(raw) as ScheduleFiring);
  }

  /** The latest firings, newest first. */
  async recentFirings(tenantId: string, scheduleId: string, n: number): Promise<ScheduleFiring[]> {
    const k = this.k(tenantId, scheduleId);
    const ats = await this.redis.zrevrange(k.firings, 0, n - 1);
    if (ats.length === 0) return [];
    const raws = await this.redis.hmget(k.firing, ...ats);
    return raws.flatMap((raw) => (raw === null ? [] : [JSON.parse(raw) as ScheduleFiring]));
  }

  /** A tenant's schedules, newest first. */
  async list(tenantId: string, limit: number, cursor: string | null): Promise<SchedulePageOf> {
    const index = this.keys.schedule(tenantId, '_').index;
    const after = cursor === null ? null : decodeCursor(cursor);
    const raw = await this.redis.zrange(
      index,
      after ? after.score : '+inf',
      '-inf',
      'BYSCORE',
      'REV',
      'LIMIT',
      0,
      limit + 1 + (after ? 50 : 0),
      'WITHSCORES',
    );
    const ids: { id: string; score: number }[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const id = raw[i] as string;
      const score = Number(raw[i + 1]);
      // same score as the cursor: only ids below the cursor's come after it
      if (after && score === after.score && id >= after.id) continue;
      ids.push({ id, score });
    }
    const page = ids.slice(0, limit);
    const loaded = await Promise.all(page.map((e) => this.load(tenantId, e.id)));
    const last = page[page.length - 1];
    return {
      schedules: loaded.filter((s): s is StoredSchedule => s !== null),
      nextCursor: ids.length > limit && last ? encodeCursor(last.score, last.id) : null,
    };
  }

  /**
   * The runs a schedule created, newest first; runs whose retention ended are dropped, unless
   * `archived` (the archive's summaries of those of them it holds) still has them.
   */
  async runs(
    tenantId: string,
    scheduleId: string,
    limit: number,
    cursor: string | null,
    archived?: (runIds: string[]) => Promise<readonly RunSummary[]>,
  ): Promise<RunPage> {
    const k = this.k(tenantId, scheduleId);
    const after = cursor === null ? null : decodeCursor(cursor);
    const raw = await this.redis.zrange(
      k.runs,
      after ? after.score : '+inf',
      '-inf',
      'BYSCORE',
      'REV',
      'LIMIT',
      0,
      limit + 1 + (after ? 1 : 0),
      'WITHSCORES',
    );
    const entries: { runId: string; score: number }[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const runId = raw[i] as string;
      const score = Number(raw[i + 1]);
      if (after && score === after.score && runId >= after.id) continue;
      entries.push({ runId, score });
    }
    const page = entries.slice(0, limit);
    const fields = await this.runRecord.scheduledRunFields(page.map((e) => e.runId));
    const expired = page.filter((_, i) => (fields[i]?.[0] ?? null) === null).map((e) => e.runId);
    const cold = new Map(
      (expired.length > 0 && archived ? await archived(expired) : []).map((r) => [r.runId, r]),
    );
    const runs: RunSummary[] = [];
    const gone: string[] = [];
    page.forEach((e, i) => {
      const [tenant, status, agent, threadId, createdAt, updatedAt, aver] = fields[i] ?? [];
      if (tenant === null || tenant === undefined) {
        const kept = cold.get(e.runId);
        if (kept) runs.push(kept);
        else gone.push(e.runId);
        return;
      }
      if (tenant !== tenantId) return;
      runs.push({
        runId: e.runId,
        tenantId: tenant,
        agent: agent ?? '',
        threadId: threadId ?? '',
        status: status as RunStatus,
        createdAt: Number(createdAt),
        updatedAt: Number(updatedAt),
        ...(aver ? { agentVersion: aver } : {}),
      });
    });
    if (gone.length > 0) await this.redis.zrem(k.runs, ...gone);
    const last = page[page.length - 1];
    return {
      runs,
      nextCursor: entries.length > limit && last ? encodeCursor(last.score, last.runId) : null,
    };
  }

  /** One batch of the global index from `cursor` ('0' = start); next cursor '0' = done. */
  async scanAll(
    cursor: string,
    count: number,
  ): Promise<{ next: string; entries: { tenantId: string; scheduleId: string }[] }> {
    const [next, flat] = await this.redis.zscan(this.keys.allSchedules, cursor, 'COUNT', count);
    const entries: { tenantId: string; scheduleId: string }[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      try {
        const [tenantId, scheduleId] = JSON.parse(flat[i] as string) as [string, string];
        entries.push({ tenantId, scheduleId });
      } catch {
        await this.redis.zrem(this.keys.allSchedules, flat[i] as string);
      }
    }
    return { next, entries };
  }
}

function decode(fields: (string | null)[]): StoredSchedule | null {
  const [version, data, fired, lastScheduledFor, lastFiredAt] = fields;
  if (version === null || version === undefined || data === null || data === undefined) return null;
  return {
    record: JSON.parse(data) as ScheduleRecord,
    version: Number(version),
    fired: Number(fired ?? 0),
    lastScheduledFor:
      lastScheduledFor === null || lastScheduledFor === undefined ? null : Number(lastScheduledFor),
    lastFiredAt: lastFiredAt === null || lastFiredAt === undefined ? null : Number(lastFiredAt),
  };
}
