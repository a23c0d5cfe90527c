import { VersionConflictError } from '@baton/core';
import {
  isBatonError,
  type CreateRunRequest,
  type ErrorCode,
  type ScheduleFiring,
} from '@baton/protocol';
import type { Job } from 'bullmq';
import { keyPart } from '../redis/keys.ts';
import { defineScript, type LuaScript } from '../redis/scripts.ts';
import type { BatonRuntime } from '../runtime.ts';
import { RunAlreadyReleasedError } from '../errors/run-already-released-error.ts';
import {
  SCHEDULED_FOR_METADATA,
  SCHEDULE_ID_METADATA,
  firingRunId,
  type ScheduleRecord,
} from './schedule-record.ts';
import type { ScheduleJobData, ScheduleService } from './schedule-service.ts';
import { firingAfter } from './schedule-timing.ts';

export type FireResult =
  | { readonly kind: 'fired'; readonly firing: ScheduleFiring }
  /** This instant was already handled (a redelivered job): nothing was done again. */
  | { readonly kind: 'duplicate'; readonly firing: ScheduleFiring }
  | { readonly kind: 'skipped'; readonly reason: 'paused' | 'limit' | 'window' | 'deleted' };

/**
 * One point of the tenant's per-minute limit, on the very counter the API's limiter
 * (rate-limiter-flexible, fixed one-minute window) keeps, with its script: a firing and a
 * request of the same tenant draw on one budget, across every API instance and worker.
 * KEYS: counter   ARGV: points, windowSeconds   Reply: {consumed, pttl}
 */
const CONSUME_LUA = `
redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
return {consumed, ttl}
`;
type Consume = LuaScript<
  [counter: string],
  [points: number, windowSeconds: number],
  [number, number]
>;

/** Errors of run creation that another attempt would not fix: recorded, not retried. */
const PERMANENT_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'thread_busy',
  'thread_too_large',
  'unknown_agent',
  'validation_failed',
  'conflict',
]);

/**
 * The instant a firing job was due. BullMQ names scheduler jobs `repeat:<scheduler>:<millis>`,
 * the same for every delivery of one firing, which is what makes the run id derived from it stable.
 */
function scheduledForOf(job: Pick<Job, 'id' | 'opts' | 'timestamp'>): number {
  const fromId = Number(job.id?.slice(job.id.lastIndexOf(':') + 1));
  if (Number.isSafeInteger(fromId) && fromId > 0) return fromId;
  return job.opts.prevMillis ?? job.timestamp;
}

/**
 * Handles one firing: creates the schedule's run through RunService (the same path as
 * POST /v1/runs) under a run id derived from the schedule and the instant, and records the
 * firing once. A thread's multitask strategy decides overlaps: 'reject' records a rejected
 * firing, 'enqueue' and 'interrupt' queue the run. Errors that a retry may fix (Redis) are
 * thrown, so the job is retried; a firing still failing after its last attempt is recorded by
 * recordFailure.
 */
export class ScheduleFirer {
  private readonly rt: BatonRuntime;
  private readonly schedules: ScheduleService;
  private readonly consume: Consume;

  constructor(runtime: BatonRuntime, schedules: ScheduleService) {
    this.rt = runtime;
    this.schedules = schedules;
    this.consume = defineScript(runtime.redis, 'batonTenantRateConsume', 1, CONSUME_LUA);
  }

  /** Null when the tenant may start a run now; otherwise why not (recorded as the firing's error). */
  private async overRunLimits(
    tenantId: string,
  ): Promise<{ code: 'rate_limited'; message: string } | null> {
    const perMinute = this.rt.config.RATE_LIMIT_PER_MINUTE;
    if (perMinute <= 0) return null;
    const counter = `${this.rt.keys.tenantRateLimit}:${keyPart(tenantId)}`;
    const [consumed] = await this.consume([counter], [1, 60]);
    if (Number(consumed) <= perMinute) return null;
    return {
      code: 'rate_limited',
      message: `the tenant is over its limit of ${perMinute} requests and firings per minute (RATE_LIMIT_PER_MINUTE); this firing created no run`,
    };
  }

  async process(job: Job<ScheduleJobData>): Promise<FireResult> {
    return this.fire(job.data.tenantId, job.data.scheduleId, scheduledForOf(job));
  }

  async fire(tenantId: string, scheduleId: string, scheduledFor: number): Promise<FireResult> {
    const { store } = this.schedules;
    const stored = await store.load(tenantId, scheduleId);
    if (!stored) {
      await this.schedules.sync(tenantId, scheduleId);
      return { kind: 'skipped', reason: 'deleted' };
    }
    const { record } = stored;
    const already = await store.firing(tenantId, scheduleId, scheduledFor);
    if (already) return { kind: 'duplicate', firing: already };
    if (record.state === 'paused') {
      await this.schedules.sync(tenantId, scheduleId);
      return { kind: 'skipped', reason: 'paused' };
    }
    if (record.limit !== undefined && stored.fired >= record.limit) {
      await this.schedules.sync(tenantId, scheduleId);
      return { kind: 'skipped', reason: 'limit' };
    }
    if (
      (record.endAt !== undefined && scheduledFor > record.endAt) ||
      (record.startAt !== undefined && scheduledFor < record.startAt)
    ) {
      await this.schedules.sync(tenantId, scheduleId);
      return { kind: 'skipped', reason: 'window' };
    }
    const firing = await this.createRun(record, scheduledFor);
    const recorded = await store.recordFiring(tenantId, scheduleId, firing);
    if (recorded.missing) return { kind: 'skipped', reason: 'deleted' };
    if (!recorded.recorded) {
      const first = await store.firing(tenantId, scheduleId, scheduledFor);
      return { kind: 'duplicate', firing: first ?? firing };
    }
    if (record.limit !== undefined && recorded.fired >= record.limit)
      await this.schedules.complete(tenantId, scheduleId, 'limit');
    else if (record.endAt !== undefined && firingAfter(record, scheduledFor) === null)
      await this.schedules.complete(tenantId, scheduleId, 'end');
    return { kind: 'fired', firing };
  }

  /** Records the firing of a job that failed its last attempt, so it is not silently lost. */
  async recordFailure(job: Job<ScheduleJobData>, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    await this.schedules.store.recordFiring(job.data.tenantId, job.data.scheduleId, {
      scheduledFor: scheduledForOf(job),
      firedAt: this.rt.clock.now(),
      outcome: 'failed',
      error: {
        code: 'internal',
        message: `the firing failed ${job.attemptsMade} times: ${message}`,
      },
    });
  }

  private async createRun(record: ScheduleRecord, scheduledFor: number): Promise<ScheduleFiring> {
    const runId = firingRunId(record.scheduleId, scheduledFor);
    const base = { scheduledFor, firedAt: this.rt.clock.now() };
    const request = firingRequest(record, runId, scheduledFor);
    // A previous delivery of this firing created the run and died before recording it, maybe
    // before starting it too: answered as a resend, which starts it if it still needs it.
    if (await this.rt.store.meta(runId)) {
      await this.rt.service.createRun(record.tenantId, request, { runId, onExisting: 'answer' });
      return { ...base, outcome: 'created', runId };
    }
    const limited = await this.overRunLimits(record.tenantId);
    if (limited) return { ...base, outcome: 'skipped', error: limited };
    try {
      const created = await this.rt.service.createRun(record.tenantId, request, { runId });
      return { ...base, outcome: created.queuedBehind ? 'queued' : 'created', runId };
    } catch (error) {
      // Another delivery created it meanwhile (and it may even have finished and released its thread).
      if (VersionConflictError.isInstance(error) || RunAlreadyReleasedError.isInstance(error))
        return { ...base, outcome: 'created', runId };
      if (isBatonError(error) && PERMANENT_CODES.has(error.code))
        return {
          ...base,
          outcome: error.code === 'thread_busy' ? 'rejected' : 'failed',
          error: { code: error.code, message: error.message },
        };
      throw error;
    }
  }
}

/** What a firing asks the run service for. */
function firingRequest(
  record: ScheduleRecord,
  runId: string,
  scheduledFor: number,
): CreateRunRequest {
  return {
    agent: record.agent,
    // Without a thread of its own, each firing starts a fresh thread named after its run, so
    // a second delivery lands on the same thread instead of a new one.
    threadId: record.threadId ?? runId,
    input: record.input,
    options: {
      ...record.options,
      metadata: {
        ...record.options?.metadata,
        [SCHEDULE_ID_METADATA]: record.scheduleId,
        [SCHEDULED_FOR_METADATA]: String(scheduledFor),
      },
    },
  };
}
