import type { BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';

/** What a timeout resolves: an event wait (the call resumes with `{ timedOut: true }`). */
export type WaitTimeoutKind = 'event';

/** A timeout that is due: the call it belongs to and what it resolves. */
export interface DueTimeout {
  readonly member: string;
  readonly runId: string;
  readonly callId: string;
  readonly kind: WaitTimeoutKind;
}

/**
 * Where waits schedule their timeouts. The one seam between the waits and whatever fires timers:
 * today a ZSET the reconciler reads (RedisWaitTimeouts); the per-shard timer index of durable
 * sleeps and deadlines (issue 36, items 1–2) can implement the same call instead. Scheduling is
 * idempotent: the same call and due time twice is one timeout.
 */
export interface WaitTimeoutScheduler {
  scheduleTimeout(runId: string, callId: string, due: number, kind: WaitTimeoutKind): Promise<void>;
}

/** The minimal timer index: one ZSET (p:waits:timeouts), score = due, swept by the reconciler. */
export class RedisWaitTimeouts implements WaitTimeoutScheduler {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  async scheduleTimeout(
    runId: string,
    callId: string,
    due: number,
    kind: WaitTimeoutKind,
  ): Promise<void> {
    // NX: a repeated registration (the run waits again after another call resumed) keeps the
    // first due time, which the ticket's expiresAt fixed anyway.
    await this.redis.zadd(this.keys.waitTimeouts, 'NX', due, JSON.stringify([runId, callId, kind]));
  }

  /** At most `limit` timeouts due at `now`, earliest first. */
  async due(now: number, limit: number): Promise<DueTimeout[]> {
    const members = await this.redis.zrangebyscore(
      this.keys.waitTimeouts,
      '-inf',
      now,
      'LIMIT',
      0,
      limit,
    );
    return members.flatMap((member) => {
      const [runId, callId, kind] = JSON.parse(member) as [string, string, WaitTimeoutKind];
      return typeof runId === 'string' && typeof callId === 'string'
        ? [{ member, runId, callId, kind }]
        : [];
    });
  }

  async remove(member: string): Promise<void> {
    await this.redis.zrem(this.keys.waitTimeouts, member);
  }
}
