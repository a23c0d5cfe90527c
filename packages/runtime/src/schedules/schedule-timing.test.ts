import { BatonError } from '@baton/core';
import { describe, expect, it } from 'vitest';
import type { ScheduleRecord } from './schedule-record.ts';
import { checkTiming, firingAfter, repeatOptions } from './schedule-timing.ts';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

function rejection(fn: () => void): { path: string; message: string } | null {
  try {
    fn();
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    expect((error as BatonError).code).toBe('validation_failed');
    const [issue] = (
      error as BatonError & { details: { issues: { path: string; message: string }[] } }
    ).details.issues;
    return issue ?? null;
  }
}

const record = (over: Partial<ScheduleRecord>): ScheduleRecord => ({
  scheduleId: 'sch-1',
  tenantId: 't',
  agent: 'a',
  input: { messages: [] },
  state: 'active',
  anchorAt: NOW,
  createdAt: NOW,
  updatedAt: NOW,
  ...over,
});

describe('checkTiming', () => {
  it('accepts what fires', () => {
    expect(
      rejection(() => checkTiming({ cron: '*/1 * * * * *', timezone: 'UTC' }, NOW)),
    ).toBeNull();
    expect(rejection(() => checkTiming({ everyMs: 1000, endAt: NOW + 1 }, NOW))).toBeNull();
  });

  it('names the field and the reason', () => {
    expect(rejection(() => checkTiming({ cron: '61 * * * *' }, NOW))).toMatchObject({
      path: 'cron',
      message: /61 .*0-59/,
    });
    expect(rejection(() => checkTiming({ cron: '0 0 30 2 *' }, NOW))?.path).toBe('cron');
    expect(rejection(() => checkTiming({ everyMs: 1000, endAt: NOW - 1 }, NOW))).toMatchObject({
      path: 'endAt',
      message: /past/,
    });
    // first firing (next 1 January) after the window ends
    expect(
      rejection(() => checkTiming({ cron: '0 0 1 1 *', endAt: NOW + 86_400_000 }, NOW)),
    ).toMatchObject({ path: 'cron', message: /after endAt/ });
  });
});

describe('firingAfter', () => {
  it('follows the cron in its zone, the interval, and stops at endAt', () => {
    const paris = { cron: '0 9 * * *', timezone: 'Europe/Paris' };
    // 09:00 in Paris in January is 08:00 UTC
    expect(firingAfter(paris, NOW)).toBe(Date.UTC(2030, 0, 2, 8, 0, 0));
    expect(firingAfter({ cron: '*/1 * * * * *' }, NOW)).toBe(NOW + 1000);
    expect(firingAfter({ everyMs: 5000 }, NOW)).toBe(NOW + 5000);
    expect(firingAfter({ everyMs: 5000, endAt: NOW + 4999 }, NOW)).toBeNull();
  });
});

describe('repeatOptions', () => {
  it('keeps an interval cadence across a re-add and passes what is left of the limit', () => {
    expect(repeatOptions(record({ everyMs: 1000, limit: 5 }), 2, NOW + 3000)).toEqual({
      every: 1000,
      startDate: NOW + 4000,
      limit: 3,
    });
    // after a resume the anchor (one interval after it) wins over the last firing
    expect(repeatOptions(record({ everyMs: 1000, anchorAt: NOW + 9000 }), 2, NOW)).toMatchObject({
      startDate: NOW + 9000,
    });
    expect(
      repeatOptions(record({ cron: '0 9 * * *', timezone: 'Asia/Tokyo', endAt: NOW + 1 }), 0, null),
    ).toEqual({ pattern: '0 9 * * *', tz: 'Asia/Tokyo', endDate: NOW + 1 });
  });
});
