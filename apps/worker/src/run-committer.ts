import type { Checkpoint } from '@baton/protocol';
import { VersionConflictError, type Transition } from '@baton/core';
import type { Logger } from 'pino';
import type { BatonQueues } from './queues.ts';
import type { RedisRunStore } from './redis/redis-run-store.ts';
import type { RedisThreadStore } from './redis/thread-store.ts';
import type { RedisClient } from './redis/scripts.ts';
import type { BatonKeys } from './redis/keys.ts';
import { persistentThreadState, type KeyRegistry } from '@baton/core';

export function activeRunsKey(keys: BatonKeys): string {
  return `${keys.prefix}:active`;
}

export interface Loaded {
  checkpoint: Checkpoint;
  version: number;
}

export interface CommitterDeps {
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly queues: BatonQueues;
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly now: () => number;
  readonly logger: Logger;
}

/**
 * Commits transitions with compare-and-set. A transition is a pure function of the checkpoint,
 * so on a version conflict it is recomputed against the fresh checkpoint instead of failing.
 * Side duties of a commit live here too: the active-run index and releasing the thread when a
 * run finishes (which may start the next queued run on that thread).
 */
export class RunCommitter {
  private readonly deps: CommitterDeps;

  constructor(deps: CommitterDeps) {
    this.deps = deps;
  }

  async load(runId: string): Promise<Loaded | null> {
    return this.deps.store.load(runId);
  }

  async commit(
    current: Loaded,
    compute: (cp: Checkpoint) => Transition,
    registry?: KeyRegistry,
  ): Promise<Loaded & { transition: Transition }> {
    let state = current;
    for (let attempt = 0; ; attempt += 1) {
      const t = compute(state.checkpoint);
      try {
        const { version } = await this.deps.store.commit(
          state.checkpoint.identity.runId,
          state.version,
          t.checkpoint,
          t.events,
          t.trigger,
        );
        const next = { checkpoint: t.checkpoint, version, transition: t };
        await this.afterCommit(state.checkpoint, next, registry);
        return next;
      } catch (error) {
        if (!(error instanceof VersionConflictError) || attempt >= 20) throw error;
        const fresh = await this.deps.store.load(state.checkpoint.identity.runId);
        if (!fresh) throw error;
        state = fresh;
      }
    }
  }

  private async afterCommit(
    before: Checkpoint,
    after: Loaded,
    registry?: KeyRegistry,
  ): Promise<void> {
    const { identity } = after.checkpoint;
    const key = activeRunsKey(this.deps.keys);
    if (after.checkpoint.status !== 'done') {
      // The reconciler only needs to know a run is unfinished and roughly since when; a status
      // change is enough (it touches the score itself when it reschedules).
      if (before.status !== after.checkpoint.status)
        await this.deps.redis.zadd(key, after.checkpoint.updatedAt, identity.runId);
      return;
    }
    if (before.status !== 'done') await this.releaseThread(after.checkpoint, registry);
    await this.deps.redis.zrem(key, identity.runId);
  }

  /** Idempotent: a second release of the same run appends nothing and promotes nobody. */
  async releaseThread(cp: Checkpoint, registry?: KeyRegistry): Promise<void> {
    const { identity } = cp;
    const threadState = registry ? persistentThreadState(registry, cp.state) : cp.state.thread;
    const promoted = await this.deps.threads.release(
      identity.tenantId,
      identity.threadId,
      identity.runId,
      cp.messages.slice(cp.historyLength),
      threadState,
    );
    if (promoted) {
      const next = await this.deps.store.load(promoted);
      if (next)
        await this.deps.queues.enqueueStep(
          { runId: promoted, tenantId: identity.tenantId },
          'start',
          next.version,
        );
      this.deps.logger.info(
        { runId: identity.runId, promoted },
        'thread released; next queued run started',
      );
    }
  }
}
