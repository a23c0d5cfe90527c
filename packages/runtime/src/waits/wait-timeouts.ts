import type { BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';

/** A leftover timeout that is due: the call it belongs to. */
interface LegacyDueTimeout {
  readonly member: string;
  readonly runId: string;
  readonly callId: string;
}

/**
 * The ZSET `p:waits:timeouts` where the release before the timer index unification scheduled
 * event-wait timeouts (JSON [runId, callId, kind], score = due). Nothing writes it any more: an
 * event wait's timeout is its call's ticket deadline, in the timer index. Its leftovers are
 * drained (read and removed) by the reconciler for one release, so runs that started waiting
 * under the previous release still time out; remove this file, RunWaits.drainLegacyTimeouts
 * and the reconciler's call one release after the unification (see docs/ARCHITECTURE.md
 * "Timers").
 */
export class LegacyWaitTimeouts {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** At most `limit` timeouts due at `now`, earliest first (unreadable members included, to drop). */
  async due(now: number, limit: number): Promise<LegacyDueTimeout[]> {
    const members = await this.redis.zrangebyscore(
      this.keys.waitTimeouts,
      '-inf',
      now,
      'LIMIT',
      0,
      limit,
    );
    return members.map((member) => {
      try {
        const [runId, callId] = JSON.parse(member) as unknown[];
        if (typeof runId === 'string' && typeof callId === 'string')
          return { member, runId, callId };
      } catch {
        // dropped below
      }
      return { member, runId: '', callId: '' };
    });
  }

  async remove(member: string): Promise<void> {
    await this.redis.zrem(this.keys.waitTimeouts, member);
  }
}
