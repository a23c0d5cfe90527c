import type { InputMessage, RunOptions, ScheduleState } from '@baton/protocol';

/** What Redis keeps of a schedule (the `data` field of its hash; version and counters beside it). */
export interface ScheduleRecord {
  readonly scheduleId: string;
  readonly tenantId: string;
  readonly name?: string;
  readonly agent: string;
  readonly threadId?: string;
  readonly input: { readonly messages: InputMessage[] };
  readonly options?: RunOptions;
  readonly cron?: string;
  readonly timezone?: string;
  readonly everyMs?: number;
  readonly startAt?: number;
  readonly endAt?: number;
  readonly limit?: number;
  readonly state: ScheduleState;
  readonly completedReason?: 'limit' | 'end';
  /** Intervals: no firing before this (the start, the creation, or one interval after a resume). */
  readonly anchorAt: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** A record with what lives beside it in the hash. */
export interface StoredSchedule {
  readonly record: ScheduleRecord;
  readonly version: number;
  /** Firings recorded so far, whatever their outcome. */
  readonly fired: number;
  /** When the latest recorded firing was due (epoch ms). */
  readonly lastScheduledFor: number | null;
  /** When a worker handled the latest recorded firing. */
  readonly lastFiredAt: number | null;
}

/** The BullMQ job scheduler id of a schedule (schedule ids are unique across tenants). */
export function schedulerIdOf(scheduleId: string): string {
  return scheduleId;
}

/**
 * The run a firing creates: derived from the schedule and the instant the firing was due, so a
 * firing handled twice (a redelivered job) finds its run instead of creating a second one.
 */
export function firingRunId(scheduleId: string, scheduledFor: number): string {
  return `${scheduleId}.${scheduledFor}`;
}

/** Run metadata keys a firing sets on its run (the run view reads scheduleId from it). */
export const SCHEDULE_ID_METADATA = 'baton.scheduleId';
export const SCHEDULED_FOR_METADATA = 'baton.scheduledFor';
