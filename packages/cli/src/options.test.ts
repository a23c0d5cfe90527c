import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseDuration } from './options.ts';

describe('parseDuration (--every)', () => {
  it('reads a number with a unit, or bare milliseconds', () => {
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('1d')).toBe(86_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('1500')).toBe(1_500);
  });

  it('refuses what is not a whole number of milliseconds', () => {
    for (const bad of ['', 'often', '5 minutes', '-1s', '0.5ms', '1w'])
      expect(() => parseDuration(bad), bad).toThrow(InvalidArgumentError);
  });
});
