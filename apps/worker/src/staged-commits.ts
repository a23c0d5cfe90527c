import { composeTransitions, type KeyRegistry, type Transition } from '@baton/core';
import type { FencedCommitOptions, Lease, Loaded, RunCommitter } from '@baton/runtime/internal';
import type { WorkerDeps } from './worker-deps.ts';

/** What staged commits write with: the committer's fenced commit, and the test hook. */
export interface StagedCommitsDeps {
  readonly committer: Pick<RunCommitter, 'commitFenced' | 'load'>;
  readonly probe?: WorkerDeps['probe'];
}

/** What a flush may add to the commit (see RunCommitOptions). */
export type FlushOptions = Pick<FencedCommitOptions, 'releaseIfIdle' | 'parentRecord'>;

/** What a flush did; the pass acts on it. */
export type Flushed =
  /** Nothing was staged: nothing written, the lease untouched. */
  | { readonly kind: 'nothing' }
  /** Written; the lease is kept (no `releaseIfIdle`). */
  | { readonly kind: 'written' }
  /** Written, and the lease released in the same round trip (`releaseIfIdle`). */
  | { readonly kind: 'released' }
  /** Written, but someone asked for the run: the lease is still held, look at it again. */
  | { readonly kind: 'kept' }
  /** A conflict dropped what was staged (nothing written): re-plan from `state`, the fresh one. */
  | { readonly kind: 'conflict' };

/**
 * The run as a step pass sees it: the last committed state plus the pure transitions computed
 * since. Transitions are staged, not written, until the pass is about to do something the
 * outside world can see (call the model, run or enqueue tools, hand the run on, release it):
 * then they go out as ONE commit. Finishing a round and beginning the next, or a model answer and
 * preparing its tool calls, thus cost one write instead of two or three; the events are the same
 * and in the same order. Nobody can observe the state between staged transitions, and a conflict
 * drops all of them at once, exactly as it would have dropped the first.
 */
export class StagedCommits {
  private committed: Loaded | null;
  private staged: Transition | null = null;
  private registry: KeyRegistry | undefined;
  private readonly deps: StagedCommitsDeps;
  private readonly lease: Lease;

  constructor(opts: {
    readonly deps: StagedCommitsDeps;
    /** Every write is fenced on it. */
    readonly lease: Lease;
    /** The state the lease acquire loaded (null: the run is gone). */
    readonly initial: Loaded | null;
  }) {
    this.deps = opts.deps;
    this.lease = opts.lease;
    this.committed = opts.initial;
  }

  /** What to plan on (the committed version, the staged checkpoint); null: the run is gone. */
  get state(): Loaded | null {
    const { committed, staged } = this;
    if (!committed || !staged) return committed;
    return { checkpoint: staged.checkpoint, version: committed.version };
  }

  get dirty(): boolean {
    return this.staged !== null;
  }

  stage(t: Transition, registry?: KeyRegistry): void {
    this.staged = this.staged ? composeTransitions(this.staged, t) : t;
    if (registry) this.registry = registry;
  }

  /**
   * Writes what is staged as one commit. On a conflict `state` becomes the fresh one, to re-plan
   * from. `parentRecord` goes out with it (nothing staged: not written). `releaseIfIdle`: the
   * last write of a pass, the lease released in the same round trip ('released' or 'kept').
   */
  async flush(options: FlushOptions = {}): Promise<Flushed> {
    const { committed, staged, lease } = this;
    if (!staged || !committed) return { kind: 'nothing' };
    this.staged = null;
    const stored = await this.deps.committer.commitFenced(committed, staged, {
      ...options,
      lease,
      registry: this.registry,
    });
    await this.deps.probe?.('after-commit', {
      runId: lease.runId,
      trigger: staged.trigger,
      committed: stored !== null,
    });
    if (stored === null) {
      this.committed = await this.deps.committer.load(lease.runId);
      return { kind: 'conflict' };
    }
    this.committed = stored;
    if (stored.released === false) return { kind: 'kept' };
    return { kind: options.releaseIfIdle === true ? 'released' : 'written' };
  }

  /** Forgets anything staged and starts again from `loaded` (a fresh load). */
  reset(loaded: Loaded | null): void {
    this.committed = loaded;
    this.staged = null;
  }
}
