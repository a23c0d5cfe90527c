import { describe, expect, it } from 'vitest';
import {
  currentVersion,
  promoted,
  rollbackPlan,
  type VersionCandidate,
} from './current-version.ts';

const v = (version: string, firstSeen: number, live = true): VersionCandidate => ({
  version,
  firstSeen,
  live,
});

describe('currentVersion', () => {
  it('is the newest live version by default', () => {
    expect(currentVersion([v('a', 1), v('b', 2), v('c', 3, false)], null)).toBe('b');
  });

  it('is the newest advertised when none is live, and null with no versions', () => {
    expect(currentVersion([v('a', 1, false), v('b', 2, false)], null)).toBe('b');
    expect(currentVersion([], null)).toBeNull();
  });

  it('is the promoted version while it is known, live or not', () => {
    const versions = [v('a', 1, false), v('b', 2)];
    expect(currentVersion(versions, { version: 'a', history: [] })).toBe('a');
    expect(currentVersion(versions, { version: 'gone', history: [] })).toBe('b');
  });
});

describe('promote and rollback', () => {
  it('a rollback returns to the version current before the last promote', () => {
    const versions = [v('a', 1), v('b', 2)];
    const record = promoted('a', null, currentVersion(versions, null));
    expect(record).toEqual({ version: 'a', history: ['b'] });
    expect(rollbackPlan(versions, record)).toEqual({
      kind: 'rollback',
      to: { version: 'b', history: [] },
    });
  });

  it('without a history it goes to the next older version, and says when there is none', () => {
    const versions = [v('a', 1), v('b', 2)];
    expect(rollbackPlan(versions, null)).toEqual({
      kind: 'rollback',
      to: { version: 'a', history: [] },
    });
    expect(rollbackPlan([v('a', 1)], null)).toEqual({ kind: 'nothing_to_roll_back', current: 'a' });
  });

  it('skips versions in the history that are no longer advertised', () => {
    const versions = [v('b', 2), v('c', 3)];
    expect(rollbackPlan(versions, { version: 'c', history: ['b', 'gone'] })).toEqual({
      kind: 'rollback',
      to: { version: 'b', history: [] },
    });
  });

  it('keeps at most 20 versions of history', () => {
    let record = null;
    for (let i = 0; i < 30; i += 1) record = promoted(`v${String(i + 1)}`, record, `v${String(i)}`);
    expect(record?.history).toHaveLength(20);
    expect(record?.history.at(-1)).toBe('v29');
  });
});
