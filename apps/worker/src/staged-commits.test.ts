import type { KeyRegistry, Transition } from '@baton/core';
import type { Checkpoint } from '@baton/protocol';
import type { FencedCommitOptions, Lease, Loaded } from '@baton/runtime/internal';
import { describe, expect, it } from 'vitest';
import { StagedCommits, type StagedCommitsDeps } from './staged-commits.ts';

const cp = (name: string): Checkpoint => ({ name }) as unknown as Checkpoint;
const transition = (name: string): Transition =>
  ({ checkpoint: cp(name), events: [], trigger: name, next: undefined }) as unknown as Transition;
const lease = { runId: 'run-1' } as Lease;
const registry = {} as KeyRegistry;

/** A committer answering with `reply` (null: a conflict), and a log of what it was asked. */
function fake(reply: 'stored' | 'conflict', released?: boolean) {
  const calls: string[] = [];
  const commits: { base: Loaded; t: Transition; options: FencedCommitOptions }[] = [];
  const deps: StagedCommitsDeps = {
    committer: {
      commitFenced: (base, t, options) => {
        calls.push('commit');
        commits.push({ base, t, options });
        if (reply === 'conflict') return Promise.resolve(null);
        return Promise.resolve({
          checkpoint: t.checkpoint,
          version: base.version + 1,
          transition: t,
          ...(released === undefined ? {} : { released }),
        });
      },
      load: () => {
        calls.push('load');
        return Promise.resolve({ checkpoint: cp('fresh'), version: 7 });
      },
    },
    probe: (point, info) => {
      calls.push(`${point}:${String(info.committed)}`);
    },
  };
  return { deps, calls, commits };
}

describe('StagedCommits', () => {
  it('writes what is staged as one commit, with its options in one object', async () => {
    const { deps, calls, commits } = fake('stored');
    const run = new StagedCommits({ deps, lease, initial: { checkpoint: cp('a'), version: 1 } });
    run.stage(transition('b'), registry);
    run.stage(transition('c'));
    expect(run.state).toEqual({ checkpoint: cp('c'), version: 1 });
    await expect(run.flush({ parentRecord: 'job' })).resolves.toEqual({ kind: 'written' });
    expect(calls).toEqual(['commit', 'after-commit:true']);
    expect(commits).toHaveLength(1);
    expect(commits[0]?.t.trigger).toBe('c');
    expect(commits[0]?.options).toEqual({ parentRecord: 'job', lease, registry });
    expect(run.state?.version).toBe(2);
    await expect(run.flush()).resolves.toEqual({ kind: 'nothing' });
    expect(calls).toHaveLength(2);
  });

  it('on a conflict: the probe, then the fresh state to re-plan from', async () => {
    const { deps, calls } = fake('conflict');
    const run = new StagedCommits({ deps, lease, initial: { checkpoint: cp('a'), version: 1 } });
    run.stage(transition('b'));
    await expect(run.flush()).resolves.toEqual({ kind: 'conflict' });
    expect(calls).toEqual(['commit', 'after-commit:false', 'load']);
    expect(run.state).toEqual({ checkpoint: cp('fresh'), version: 7 });
    expect(run.dirty).toBe(false);
  });

  it('releaseIfIdle: released, or kept when someone asked for the run', async () => {
    const released = fake('stored', true);
    const run = new StagedCommits({
      deps: released.deps,
      lease,
      initial: { checkpoint: cp('a'), version: 1 },
    });
    run.stage(transition('b'));
    await expect(run.flush({ releaseIfIdle: true })).resolves.toEqual({ kind: 'released' });
    expect(released.commits[0]?.options.releaseIfIdle).toBe(true);

    const kept = fake('stored', false);
    const again = new StagedCommits({
      deps: kept.deps,
      lease,
      initial: { checkpoint: cp('a'), version: 1 },
    });
    again.stage(transition('b'));
    await expect(again.flush({ releaseIfIdle: true })).resolves.toEqual({ kind: 'kept' });
  });

  it('nothing staged, or the run gone: nothing written', async () => {
    const { deps, calls } = fake('stored');
    const gone = new StagedCommits({ deps, lease, initial: null });
    gone.stage(transition('b'));
    await expect(gone.flush({ releaseIfIdle: true })).resolves.toEqual({ kind: 'nothing' });
    expect(calls).toEqual([]);
  });
});
