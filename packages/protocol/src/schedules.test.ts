import { describe, expect, it } from 'vitest';
import { CreateScheduleRequestSchema, instantMs, isTimeZone } from './schedules.ts';

const base = { agent: 'assistant', input: { messages: [{ role: 'user', content: 'hi' }] } };

function issues(body: Record<string, unknown>): { path: string; message: string }[] {
  const parsed = CreateScheduleRequestSchema.safeParse({ ...base, ...body });
  if (parsed.success) return [];
  return parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

describe('CreateScheduleRequestSchema', () => {
  it('takes a 5- or 6-field cron with a zone, or an interval', () => {
    expect(issues({ cron: '0 9 * * 1-5', timezone: 'Europe/Paris' })).toEqual([]);
    expect(issues({ cron: '*/1 * * * * *' })).toEqual([]);
    expect(issues({ cron: '0 12 * * MON#1' })).toEqual([]);
    expect(issues({ everyMs: 1000, limit: 3, startAt: '2030-01-01T00:00:00Z' })).toEqual([]);
  });

  it('says what is wrong with the cron field', () => {
    expect(issues({ cron: '* * * *' })[0]).toMatchObject({ path: 'cron', message: /has 4 field/ });
    expect(issues({ cron: '* * * * * * *' })[0]?.message).toMatch(/has 7 field/);
    expect(issues({ cron: '* * * * $' })[0]?.message).toMatch(/"\$"/);
  });

  it('wants exactly one of cron and everyMs, a zone only with cron, a sane interval', () => {
    expect(issues({})[0]).toMatchObject({ path: 'cron', message: /either cron/ });
    expect(issues({ cron: '* * * * *', everyMs: 1000 })[0]?.path).toBe('everyMs');
    expect(issues({ everyMs: 999 })[0]?.path).toBe('everyMs');
    expect(issues({ everyMs: 1000, timezone: 'UTC' })[0]?.path).toBe('timezone');
    expect(issues({ cron: '* * * * *', timezone: 'Europe/Nowhere' })[0]).toMatchObject({
      path: 'timezone',
      message: /IANA/,
    });
  });

  it('checks the window and rejects unknown fields', () => {
    expect(issues({ everyMs: 1000, startAt: 2000, endAt: 1000 })[0]?.path).toBe('endAt');
    expect(issues({ everyMs: 1000, startAt: 'tomorrow' })[0]?.path).toBe('startAt');
    expect(issues({ everyMs: 1000, every: 5 })[0]?.message).toMatch(/every/);
  });

  it('knows instants and zones', () => {
    expect(instantMs('1970-01-01T00:00:01Z')).toBe(1000);
    expect(instantMs(5)).toBe(5);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('America/New_York')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
  });
});
