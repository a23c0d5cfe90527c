import type { Checkpoint } from '@baton/protocol';
import type { BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';

/** Which live index a run is in: `runs:active` (should be moving) or `runs:waiting` (idle). */
export type LiveIndex = 'active' | 'waiting';

/** Member of the expiring-runs index: enough to drop the run from its tenant and thread indexes. */
export function expiringMember(cp: Checkpoint): string {
  const { tenantId, threadId, runId } = cp.identity;
  return JSON.stringify([tenantId, threadId, runId]);
}

/**
 * Every write to the indexes that list runs: `runs:active`, `runs:waiting`, `runs:gc` (finished
 * runs by the time their keys expire) and the tenant's and thread's `:runs` (README.md in this
 * folder). They live in other slots than the run, so no run script can write them: each is a
 * command of its own, before or after the run's write, and the order is what keeps them right:
 *
 *   An entry is added BEFORE the write that gives the run work (create, a decision that wakes
 *   it, a promotion), and removed only AFTER the write that leaves it idle or finished.
 *
 * A crash between the two then leaves an entry too many (a run listed as active that is idle,
 * an index entry of a run that never came to be or has expired), which the reconciler and
 * listRuns drop when they meet it; never a run that has work and that no index lists.
 */
export class RunIndex {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  private live(index: LiveIndex): string {
    return index === 'active' ? this.keys.activeRuns : this.keys.waitingRuns;
  }

  /** Lists the run in `index` (or moves its score to `at`): before the write that needs it. */
  async add(index: LiveIndex, runId: string, at: number): Promise<void> {
    await this.redis.zadd(this.live(index), at, runId);
  }

  /** Removes the run from `index` (an entry whose run is gone, or idle in the other). */
  async remove(index: LiveIndex, runId: string): Promise<void> {
    await this.redis.zrem(this.live(index), runId);
  }

  /** Into `index`, then out of the other: added first, so the run is never in neither. */
  async move(index: LiveIndex, runId: string, at: number): Promise<void> {
    await this.add(index, runId, at);
    await this.remove(index === 'active' ? 'waiting' : 'active', runId);
  }

  /** Out of both live indexes: after everything a finished run owes is done. */
  async leaveLive(runId: string): Promise<void> {
    await this.remove('active', runId);
    await this.remove('waiting', runId);
  }

  /** A created run in its tenant's index and, unless `threadIndexed`, its thread's. */
  async listCreated(
    cp: Pick<Checkpoint, 'identity' | 'createdAt'>,
    threadIndexed: boolean,
  ): Promise<void> {
    const id = cp.identity;
    await Promise.all([
      this.redis.zadd(this.keys.tenantRuns(id.tenantId), cp.createdAt, id.runId),
      threadIndexed
        ? undefined
        : this.redis.zadd(this.keys.thread(id.tenantId, id.threadId).runs, cp.createdAt, id.runId),
    ]);
  }

  /** Drops entries of `indexKey` (a tenant's or thread's :runs) whose runs have expired. */
  async pruneListed(indexKey: string, runIds: readonly string[]): Promise<void> {
    if (runIds.length > 0) await this.redis.zrem(indexKey, ...runIds);
  }

  /** Removes a run from every index that lists it (its keys are gone or going). */
  async dropEverywhere(tenantId: string, threadId: string, runId: string): Promise<void> {
    const thread = this.keys.thread(tenantId, threadId);
    await Promise.all([
      this.redis.zrem(this.keys.tenantRuns(tenantId), runId),
      this.redis.zrem(thread.runs, runId),
      this.redis.hdel(thread.released, runId),
      this.redis.zrem(this.keys.activeRuns, runId),
      this.redis.zrem(this.keys.waitingRuns, runId),
    ]);
  }

  /** A finished run's place in `runs:gc`, due when its keys expire. */
  async expireAt(member: string, at: number): Promise<void> {
    await this.redis.zadd(this.keys.expiringRuns, at, member);
  }

  /** Out of `runs:gc` (collected, deleted, or not finished any more). */
  async forgetExpiring(member: string): Promise<void> {
    await this.redis.zrem(this.keys.expiringRuns, member);
  }

  /** Members of `runs:gc` due by `now` (at most `limit`). */
  dueExpiring(now: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.expiringRuns, '-inf', now, 'LIMIT', 0, limit);
  }

  /** Runs of `runs:active` untouched since `before` (at most `limit`): the reconciler's scan. */
  staleActive(before: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.activeRuns, '-inf', before, 'LIMIT', 0, limit);
  }
}
