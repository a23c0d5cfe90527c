import { describe, expect, it } from 'vitest';
import { cadenceText, everyText } from './schedule-text.ts';

describe('schedule text', () => {
  it('says an interval in the largest unit it reaches', () => {
    expect(everyText(1_000)).toBe('every 1 s');
    expect(everyText(90_000)).toBe('every 1.5 min');
    expect(everyText(86_400_000)).toBe('every 1 d');
    expect(everyText(500)).toBe('every 500 ms');
  });

  it('says a cron expression with its zone (UTC when none is stored)', () => {
    expect(cadenceText({ cron: '0 9 * * 1-5', timezone: 'Europe/Paris' })).toBe(
      'cron 0 9 * * 1-5 (Europe/Paris)',
    );
    expect(cadenceText({ cron: '*/10 * * * * *' })).toBe('cron */10 * * * * * (UTC)');
    expect(cadenceText({ everyMs: 3_600_000 })).toBe('every 1 h');
  });
});
