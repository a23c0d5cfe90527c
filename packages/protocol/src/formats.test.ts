import { describe, expect, it } from 'vitest';
import { FORMATS, readFormat, type FormatKind, type FormatRange } from './formats.ts';

/**
 * What the release before this one reads and writes (7c7c246, before format versions: every
 * kind at 1). When a release ships, the next one copies its FORMATS here.
 */
const PREVIOUS_RELEASE: Readonly<Record<FormatKind, FormatRange>> = {
  job: { writes: 1, oldest: 1, newest: 1 },
  checkpoint: { writes: 1, oldest: 1, newest: 1 },
  event: { writes: 1, oldest: 1, newest: 1 },
  history: { writes: 1, oldest: 1, newest: 1 },
  admission: { writes: 1, oldest: 1, newest: 1 },
  script: { writes: 1, oldest: 1, newest: 1 },
};

describe('format versions', () => {
  const kinds = Object.keys(FORMATS) as FormatKind[];

  it.each(kinds)(
    '%s: this release writes what the release before reads, and reads what it writes',
    (kind) => {
      const ours = FORMATS[kind];
      const before = PREVIOUS_RELEASE[kind];
      expect(ours.writes).toBeLessThanOrEqual(before.newest);
      expect(ours.writes).toBeGreaterThanOrEqual(before.oldest);
      expect(readFormat(kind, before.writes).action).toBe('read');
      expect(ours.oldest).toBeLessThanOrEqual(ours.writes);
      expect(ours.writes).toBeLessThanOrEqual(ours.newest);
    },
  );

  it('reads its own versions, and a value stored before versions existed as version 1', () => {
    expect(readFormat('job', 1)).toEqual({ action: 'read', version: 1 });
    expect(readFormat('checkpoint', undefined)).toEqual({ action: 'read', version: 1 });
  });

  it('defers a newer version to a release that reads it', () => {
    const verdict = readFormat('job', FORMATS.job.newest + 1);
    expect(verdict.action).toBe('defer');
    expect(verdict.action === 'defer' && verdict.reason).toMatch(/newer than this release reads/);
  });

  it('refuses what is no version, and versions older than it reads', () => {
    expect(readFormat('job', 'two').action).toBe('refuse');
    expect(readFormat('job', 0).action).toBe('refuse');
    expect(readFormat('job', 1.5).action).toBe('refuse');
    const later = { ...FORMATS, checkpoint: { writes: 3, oldest: 2, newest: 3 } };
    expect(readFormat('checkpoint', 1, later).action).toBe('refuse');
    expect(readFormat('checkpoint', 2, later)).toEqual({ action: 'read', version: 2 });
    expect(readFormat('checkpoint', 4, later).action).toBe('defer');
  });
});
