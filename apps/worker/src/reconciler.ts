import type { Logger } from 'pino';
import type { BatonQueues } from './queues.ts';
import type { RedisRunStore } from './redis/redis-run-store.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { RedisClient } from './redis/scripts.ts';
import { activeRunsKey, type RunCommitter } from './run-committer.ts';
import { runAuxKey } from './run-lease.ts';

/**
 * Finds runs that should be moving but have not been touched for a while (e.g. a crash between
 * a commit and the enqueue of the next job) and schedules a pass. A pass on a healthy run is a
 * no-op, so being wrong costs one cheap job, never a duplicate effect.
 */
export class Reconciler {
  private readonly deps: {
    redis: RedisClient;
    keys: BatonKeys;
    store: RedisRunStore;
    queues: BatonQueues;
    committer: RunCommitter;
    logger: Logger;
    now: () => number;
    staleAfterMs: number;
  };

  constructor(deps: Reconciler['deps']) {
    this.deps = deps;
  }

  /** One scan; returns the run ids it rescheduled. */
  async scan(limit = 500): Promise<string[]> {
    const { deps } = this;
    const cutoff = deps.now() - deps.staleAfterMs;
    const stale = await deps.redis.zrangebyscore(
      activeRunsKey(deps.keys),
      '-inf',
      cutoff,
      'LIMIT',
      0,
      limit,
    );
    const rescheduled: string[] = [];
    for (const runId of stale) {
      const stored = await deps.store.load(runId);
      if (!stored) {
        await deps.redis.zrem(activeRunsKey(deps.keys), runId);
        continue;
      }
      const { checkpoint } = stored;
      if (checkpoint.status === 'done') {
        // Finished but the thread was never released (crash right after the final commit).
        await deps.committer.releaseThread(checkpoint);
        await deps.redis.zrem(activeRunsKey(deps.keys), runId);
        continue;
      }
      const idle =
        checkpoint.status === 'waiting' &&
        checkpoint.inbox.length === 0 &&
        !checkpoint.cancelRequested;
      if (idle) continue;
      const queuedBehindThread =
        checkpoint.status === 'created' && !(await this.isActiveOnThread(checkpoint.identity));
      if (queuedBehindThread) continue;
      if (await deps.redis.exists(runAuxKey(deps.keys, runId, 'lease'))) continue;
      await deps.queues.enqueueStep(checkpoint.identity, 'reconcile', stored.version, true);
      // Touch the score so a run is not rescheduled on every scan while its pass is queued.
      await deps.redis.zadd(activeRunsKey(deps.keys), deps.now(), runId);
      rescheduled.push(runId);
    }
    if (rescheduled.length > 0)
      deps.logger.info({ runs: rescheduled.length }, 'reconciler rescheduled runs');
    return rescheduled;
  }

  private async isActiveOnThread(identity: {
    tenantId: string;
    threadId: string;
    runId: string;
  }): Promise<boolean> {
    const meta = this.deps.keys.thread(identity.tenantId, identity.threadId).meta;
    return (await this.deps.redis.hget(meta, 'activeRunId')) === identity.runId;
  }
}
