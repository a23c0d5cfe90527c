import { randomUUID } from 'node:crypto';
import { BatonError, UnknownAgentError } from '@baton/core';
import {
  instantMs,
  type CreateScheduleRequest,
  type RunPage,
  type ScheduleFiring,
} from '@baton/protocol';
import { Job, type Queue } from 'bullmq';
import type { BatonRuntime } from '../runtime.ts';
import { withSingletonLock } from '../redis/singleton-lock.ts';
import { schedulerIdOf, type ScheduleRecord, type StoredSchedule } from './schedule-record.ts';
import { RedisScheduleStore, type SchedulePageOf } from './schedule-store.ts';
import { checkTiming, repeatOptions } from './schedule-timing.ts';
import { ScheduleNotFoundError } from '../errors/schedule-not-found-error.ts';

/** The queue whose job schedulers fire schedules (one job per firing). */
export const SCHEDULE_QUEUE = 'schedules';

/** What a firing job carries; the instant it was due is in its job id. */
export interface ScheduleJobData {
  readonly v: 1;
  readonly kind: 'schedule';
  readonly tenantId: string;
  readonly scheduleId: string;
}

/** What sync() did to bring the queue in line with the record. */
export type SyncAction = 'none' | 'added' | 'removed' | 'completed' | 'restarted';

export interface ScheduleServiceOptions {
  /**
   * A job scheduler whose next firing is this overdue with no live job for it has lost its chain
   * (its job was deleted by hand, or lost with Redis data): sync re-creates it.
   */
  readonly chainGraceMs?: number;
}

/**
 * Schedules: the record in Redis is the source of truth, the BullMQ job scheduler follows it.
 * Every change is a compare-and-set on the record first, then sync() makes the queue match
 * (active → a scheduler exists; paused, completed or deleted → none). A crash between the two
 * leaves a record that the next sync (repair sweep, a firing, the next API call) completes.
 */
export class ScheduleService {
  readonly store: RedisScheduleStore;
  private readonly rt: BatonRuntime;
  private readonly chainGraceMs: number;

  constructor(runtime: BatonRuntime, opts: ScheduleServiceOptions = {}) {
    this.rt = runtime;
    this.store = new RedisScheduleStore(runtime.redis, runtime.keys);
    this.chainGraceMs = opts.chainGraceMs ?? 60_000;
  }

  get queue(): Queue {
    return this.rt.queues.queue(SCHEDULE_QUEUE);
  }

  private now(): number {
    return this.rt.clock.now();
  }

  /**
   * `opts.scheduleId`: an id derived from the request (an Idempotency-Key). A record that exists
   * under it already is an earlier attempt's, one that created it and then failed: it is synced
   * (its job scheduler may be missing) and answered, never created twice.
   */
  async create(
    tenantId: string,
    request: CreateScheduleRequest,
    opts: { readonly scheduleId?: string } = {},
  ): Promise<StoredSchedule> {
    const now = this.now();
    if (!(await this.rt.service.catalog.get(request.agent)))
      throw new UnknownAgentError(
        request.agent,
        (await this.rt.service.catalog.list()).map((a) => a.name),
      );
    const startAt = request.startAt === undefined ? undefined : instantMs(request.startAt);
    const endAt = request.endAt === undefined ? undefined : instantMs(request.endAt);
    const timing = {
      ...(request.cron !== undefined
        ? { cron: request.cron.trim().replace(/\s+/g, ' '), timezone: request.timezone ?? 'UTC' }
        : {}),
      ...(request.everyMs !== undefined ? { everyMs: request.everyMs } : {}),
      ...(startAt !== undefined ? { startAt } : {}),
      ...(endAt !== undefined ? { endAt } : {}),
      ...(request.limit !== undefined ? { limit: request.limit } : {}),
    };
    checkTiming(timing, now);
    const record: ScheduleRecord = {
      scheduleId: opts.scheduleId ?? `sch-${randomUUID()}`,
      tenantId,
      ...(request.name !== undefined ? { name: request.name } : {}),
      agent: request.agent,
      ...(request.threadId !== undefined ? { threadId: request.threadId } : {}),
      input: { messages: request.input.messages },
      ...(request.options !== undefined ? { options: request.options } : {}),
      ...timing,
      state: 'active',
      anchorAt: Math.max(startAt ?? now, now),
      createdAt: now,
      updatedAt: now,
    };
    const max = this.rt.config.SCHEDULES_MAX_PER_TENANT;
    const created = await this.store.create(record, max);
    if (created.kind === 'over_limit') {
      // The repair sweep's entry (written before the record) names a schedule that never was.
      await this.store.dropEntry(tenantId, record.scheduleId).catch(() => undefined);
      throw new BatonError(
        'quota_exceeded',
        `this tenant has ${created.count} schedules, the limit is ${max}: delete schedules it no longer needs (DELETE /v1/schedules/:id), or raise SCHEDULES_MAX_PER_TENANT on the API`,
        { limit: max, count: created.count, setting: 'SCHEDULES_MAX_PER_TENANT' },
      );
    }
    try {
      await this.sync(tenantId, record.scheduleId);
    } catch (error) {
      // Not created after all: no record may fire without the client knowing it exists.
      await this.store.delete(tenantId, record.scheduleId).catch(() => undefined);
      await this.queue.removeJobScheduler(schedulerIdOf(record.scheduleId)).catch(() => false);
      await this.store.dropEntry(tenantId, record.scheduleId).catch(() => undefined);
      throw error;
    }
    await this.rt.durability.acknowledge();
    return this.get(tenantId, record.scheduleId);
  }

  /** The schedule, or 404 (another tenant's schedule is not found either). */
  async get(tenantId: string, scheduleId: string): Promise<StoredSchedule> {
    const stored = await this.store.load(tenantId, scheduleId);
    if (!stored) throw new ScheduleNotFoundError(scheduleId);
    return stored;
  }

  /** The schedule's last `n` firings, newest first. */
  async recentFirings(stored: StoredSchedule, n: number): Promise<ScheduleFiring[]> {
    return this.store.recentFirings(stored.record.tenantId, stored.record.scheduleId, n);
  }

  /** The runs the schedule started, newest first (ScheduleNotFoundError for another tenant's). */
  async runs(
    tenantId: string,
    scheduleId: string,
    limit: number,
    cursor: string | null,
  ): Promise<RunPage> {
    await this.get(tenantId, scheduleId);
    const { archive } = this.rt;
    // Runs Redis let go of are listed from the archive, as GET /v1/runs lists them.
    return this.store.runs(
      tenantId,
      scheduleId,
      limit,
      cursor,
      archive ? (ids) => archive.summaries(tenantId, ids) : undefined,
    );
  }

  async list(tenantId: string, limit: number, cursor: string | null): Promise<SchedulePageOf> {
    return this.store.list(tenantId, limit, cursor);
  }

  /** When the queue will fire it next; null unless active. */
  async nextFireAt(stored: StoredSchedule): Promise<number | null> {
    if (stored.record.state !== 'active') return null;
    const scheduler = await this.queue.getJobScheduler(schedulerIdOf(stored.record.scheduleId));
    return scheduler?.next ?? null;
  }

  /** Idempotent: pausing a paused or completed schedule changes nothing. */
  async pause(tenantId: string, scheduleId: string): Promise<StoredSchedule> {
    await this.change(tenantId, scheduleId, (r) =>
      r.state === 'active' ? { ...r, state: 'paused' } : null,
    );
    return this.get(tenantId, scheduleId);
  }

  /**
   * Idempotent for an active schedule; 409 for a completed one. An interval schedule fires one
   * interval after the resume; firings missed while paused are skipped.
   */
  async resume(tenantId: string, scheduleId: string): Promise<StoredSchedule> {
    await this.change(tenantId, scheduleId, (r) => {
      if (r.state === 'active') return null;
      if (r.state === 'completed')
        throw new BatonError(
          'conflict',
          `schedule ${scheduleId} has completed (${r.completedReason === 'limit' ? 'its limit of firings was reached' : 'its endAt has passed'}); create a new one`,
          { scheduleId, state: r.state },
        );
      return { ...r, state: 'active', anchorAt: this.now() + (r.everyMs ?? 0) };
    });
    return this.get(tenantId, scheduleId);
  }

  /** Deletes the record, then its job scheduler; the runs it created stay. */
  async delete(tenantId: string, scheduleId: string): Promise<void> {
    if (!(await this.store.delete(tenantId, scheduleId)))
      throw new ScheduleNotFoundError(scheduleId);
    await this.queue.removeJobScheduler(schedulerIdOf(scheduleId));
    await this.store.dropEntry(tenantId, scheduleId);
    await this.rt.durability.acknowledge();
  }

  /** Compare-and-set of the record (retried on conflicts), then sync. `edit` null = no change. */
  private async change(
    tenantId: string,
    scheduleId: string,
    edit: (record: ScheduleRecord) => ScheduleRecord | null,
  ): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const stored = await this.get(tenantId, scheduleId);
      const next = edit(stored.record);
      if (next === null) break;
      const result = await this.store.update(stored.version, { ...next, updatedAt: this.now() });
      if (result.kind === 'missing') throw new ScheduleNotFoundError(scheduleId);
      if (result.kind === 'updated') break;
      if (attempt === 19)
        throw new BatonError('conflict', `schedule ${scheduleId} keeps changing; retry`);
    }
    await this.sync(tenantId, scheduleId);
    await this.rt.durability.acknowledge();
  }

  /** Marks an active schedule completed (limit reached or window over); idempotent. */
  async complete(tenantId: string, scheduleId: string, reason: 'limit' | 'end'): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const stored = await this.store.load(tenantId, scheduleId);
      if (!stored || stored.record.state === 'completed') break;
      const result = await this.store.update(stored.version, {
        ...stored.record,
        state: 'completed',
        completedReason: reason,
        updatedAt: this.now(),
      });
      if (result.kind !== 'conflict') break;
    }
    await this.sync(tenantId, scheduleId);
  }

  /**
   * Makes the queue match the record: a job scheduler exists exactly while the record is active
   * and has firings left. Re-reads the record after acting and goes again if it changed
   * meanwhile (a pause landing between our read and our upsert is undone here, not left firing).
   */
  async sync(tenantId: string, scheduleId: string): Promise<SyncAction> {
    const id = schedulerIdOf(scheduleId);
    let action: SyncAction = 'none';
    for (let round = 0; round < 5; round += 1) {
      const stored = await this.store.load(tenantId, scheduleId);
      if (!stored) {
        if (await this.queue.removeJobScheduler(id)) action = 'removed';
        return action;
      }
      const { record } = stored;
      const exhausted = this.exhausted(stored);
      if (record.state === 'active' && exhausted !== null) {
        await this.complete(tenantId, scheduleId, exhausted);
        return 'completed';
      }
      if (record.state === 'active') {
        const scheduler = await this.queue.getJobScheduler(id);
        if (!scheduler) {
          await this.upsert(stored);
          action = 'added';
        } else if (await this.chainLost(id, scheduler.next)) {
          await this.queue.removeJobScheduler(id);
          await this.upsert(stored);
          action = 'restarted';
        }
      } else if (await this.queue.removeJobScheduler(id)) action = 'removed';
      const after = await this.store.load(tenantId, scheduleId);
      if (after?.version === stored.version) return action;
    }
    return action;
  }

  private exhausted(stored: StoredSchedule): 'limit' | 'end' | null {
    const { record } = stored;
    if (record.limit !== undefined && stored.fired >= record.limit) return 'limit';
    if (record.endAt !== undefined && record.endAt < this.now()) return 'end';
    return null;
  }

  private async upsert(stored: StoredSchedule): Promise<void> {
    const { record } = stored;
    const data: ScheduleJobData = {
      v: 1,
      kind: 'schedule',
      tenantId: record.tenantId,
      scheduleId: record.scheduleId,
    };
    const age = this.rt.queues.jobRetentionSeconds;
    await this.queue.upsertJobScheduler(
      schedulerIdOf(record.scheduleId),
      repeatOptions(record, stored.fired, stored.lastScheduledFor),
      {
        name: 'fire',
        data,
        opts: {
          attempts: 5,
          backoff: { type: 'exponential', delay: 500 },
          removeOnComplete: { age, count: 1_000 },
          removeOnFail: { age, count: 1_000 },
        },
      },
    );
  }

  /** The scheduler's next job is long overdue and nothing will run it. */
  private async chainLost(id: string, next: number | undefined): Promise<boolean> {
    if (next === undefined || next > this.now() - this.chainGraceMs) return false;
    const job = await Job.fromId(this.queue, `repeat:${id}:${next}`);
    if (!job) return true;
    const state = await job.getState();
    return state === 'completed' || state === 'failed' || state === 'unknown';
  }

  /**
   * One batch of the repair sweep over every schedule of every tenant (one sweeper at a time
   * across workers); `all` walks the whole index (worker start-up). Returns what it changed.
   */
  async repair(
    opts: { batch?: number; all?: boolean } = {},
  ): Promise<{ checked: number; repaired: number }> {
    const { redis, keys } = this.rt;
    let checked = 0;
    let repaired = 0;
    await withSingletonLock(redis, { key: keys.scheduleRepairLock, ttlMs: 60_000 }, async () => {
      let cursor = opts.all ? '0' : ((await redis.get(keys.scheduleRepairCursor)) ?? '0');
      do {
        const { next, entries } = await this.store.scanAll(cursor, opts.batch ?? 200);
        for (const { tenantId, scheduleId } of entries) {
          checked += 1;
          if ((await this.sync(tenantId, scheduleId)) !== 'none') repaired += 1;
          if (!(await this.store.load(tenantId, scheduleId)))
            await this.store.dropEntry(tenantId, scheduleId);
        }
        cursor = next;
      } while (opts.all && cursor !== '0');
      await redis.set(keys.scheduleRepairCursor, cursor, 'EX', 86_400);
    });
    return { checked, repaired };
  }
}
