import { BatonError } from '@baton/core';
import type { RepeatOptions } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import type { ScheduleRecord } from './schedule-record.ts';

/**
 * When a schedule fires. Cron expressions are parsed with cron-parser, the parser BullMQ's job
 * schedulers use, so an expression accepted here is one the queue can run, and the instants
 * computed here are the ones the queue picks.
 */

export type Timing = Pick<
  ScheduleRecord,
  'cron' | 'timezone' | 'everyMs' | 'startAt' | 'endAt' | 'limit'
>;

function invalid(path: string, message: string): BatonError {
  return new BatonError('validation_failed', `invalid request body: ${path}: ${message}`, {
    issues: [{ path, message, code: 'custom' }],
  });
}

/** The first firing at or after `from` (epoch ms), or null when there is none. */
function nextCron(cron: string, timezone: string, from: number): number | null {
  const interval = CronExpressionParser.parse(cron, {
    tz: timezone,
    currentDate: new Date(from - 1),
  });
  try {
    return interval.next().getTime();
  } catch {
    return null;
  }
}

/**
 * Checks what the schema cannot: the expression parses and fires at least once within the
 * schedule's window, and the window has not already ended. Throws 400 validation_failed naming
 * the field.
 */
export function checkTiming(timing: Timing, now: number): void {
  if (timing.endAt !== undefined && timing.endAt <= now)
    throw invalid('endAt', 'is in the past; the schedule would never fire');
  if (timing.cron === undefined) return;
  const from = Math.max(now, timing.startAt ?? now);
  let next: number | null;
  try {
    next = nextCron(timing.cron, timing.timezone ?? 'UTC', from);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw invalid('cron', `"${timing.cron}" is not a valid cron expression (${reason})`);
  }
  if (next === null)
    throw invalid('cron', `"${timing.cron}" never fires (e.g. a day that no month has)`);
  if (timing.endAt !== undefined && next > timing.endAt)
    throw invalid(
      'cron',
      `"${timing.cron}" first fires at ${new Date(next).toISOString()}, after endAt; widen the window`,
    );
}

/** The firing due after one due at `after`, or null when the schedule has no more. */
export function firingAfter(timing: Timing, after: number): number | null {
  let next: number | null;
  if (timing.everyMs !== undefined) next = after + timing.everyMs;
  else if (timing.cron !== undefined)
    next = nextCron(timing.cron, timing.timezone ?? 'UTC', after + 1);
  else return null;
  if (next === null) return null;
  return timing.endAt !== undefined && next > timing.endAt ? null : next;
}

/**
 * BullMQ repeat options for the record. Intervals start at `anchorAt` (the start, creation, or
 * one interval after a resume) or one interval after the last firing, whichever is later, so a
 * scheduler re-added after a pause or a crash keeps the cadence instead of firing at once. Cron
 * expressions need no anchor: the queue computes the next instant from now. `limit` is the
 * number of firings left.
 */
export function repeatOptions(
  record: ScheduleRecord,
  fired: number,
  lastScheduledFor: number | null,
): Omit<RepeatOptions, 'key'> {
  const common: Omit<RepeatOptions, 'key'> = {
    ...(record.endAt !== undefined ? { endDate: record.endAt } : {}),
    ...(record.limit !== undefined ? { limit: Math.max(record.limit - fired, 1) } : {}),
  };
  if (record.everyMs !== undefined) {
    const afterLast = lastScheduledFor === null ? 0 : lastScheduledFor + record.everyMs;
    return {
      ...common,
      every: record.everyMs,
      startDate: Math.max(record.anchorAt, afterLast),
    };
  }
  return {
    ...common,
    pattern: record.cron ?? '',
    tz: record.timezone ?? 'UTC',
    ...(record.startAt !== undefined ? { startDate: record.startAt } : {}),
  };
}
