import { composeTransitions, type KeyRegistry, type Transition } from '@baton/core';
import type { Loaded } from '@baton/runtime/internal';

/**
 * Writes `t` over `base`; returns what is stored afterwards (the fresh state on a conflict).
 * `releaseIfIdle`: the write also releases the lease unless someone asked for the run (then
 * `released` is false). `parentRecord`: written with it (see RedisRunStore.commit).
 */
export type CommitWriter = (
  base: Loaded,
  t: Transition,
  registry: KeyRegistry | undefined,
  releaseIfIdle: boolean,
  parentRecord?: string,
) => Promise<(Loaded & { readonly released?: boolean }) | null>;

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
  private readonly write: CommitWriter;

  constructor(initial: Loaded | null, write: CommitWriter) {
    this.committed = initial;
    this.write = write;
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
   * Writes what is staged as one commit. False when a conflict dropped it: `state` is then the
   * fresh one, to re-plan from. `parentRecord` goes out with it (nothing staged: not written).
   */
  async flush(parentRecord?: string): Promise<boolean> {
    return (await this.writeStaged(false, parentRecord)) !== 'conflict';
  }

  /**
   * The last write of a pass: what is staged, and the lease released in the same round trip.
   * 'released'; 'kept' (written, but someone asked for the run: the lease is still held, look
   * again); 'conflict' (nothing written; re-plan); 'nothing' (nothing was staged).
   */
  async flushAndRelease(): Promise<'released' | 'kept' | 'conflict' | 'nothing'> {
    const written = await this.writeStaged(true);
    return written === 'written' ? 'released' : written;
  }

  private async writeStaged(
    releaseIfIdle: boolean,
    parentRecord?: string,
  ): Promise<'written' | 'kept' | 'conflict' | 'nothing'> {
    const { committed, staged } = this;
    if (!staged || !committed) return 'nothing';
    this.staged = null;
    const stored = await this.write(committed, staged, this.registry, releaseIfIdle, parentRecord);
    this.committed = stored;
    if (stored === null || stored.checkpoint !== staged.checkpoint) return 'conflict';
    return stored.released === false ? 'kept' : 'written';
  }

  /** Forgets anything staged and starts again from `loaded` (a fresh load). */
  reset(loaded: Loaded | null): void {
    this.committed = loaded;
    this.staged = null;
  }
}
