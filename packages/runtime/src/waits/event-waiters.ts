import type { BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';

/** One waiting call. */
export interface EventWaiter {
  readonly runId: string;
  readonly callId: string;
}

/**
 * Adds a waiter and keeps the set alive until its latest waiter's expiry (plus a minute): a set
 * nobody sends the event to must not outlive its waits.
 */
const ADD = `
redis.call('SADD', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
local want = tonumber(ARGV[2]) - tonumber(ARGV[3])
if ttl < 0 or ttl < want then redis.call('PEXPIRE', KEYS[1], want) end
return 1
`;

/** Takes every waiter at once: each is claimed by exactly one event (the set is gone after). */
const CLAIM = `
local members = redis.call('SMEMBERS', KEYS[1])
redis.call('DEL', KEYS[1])
return members
`;

/** The index <tenant, name, key> -> waiting calls (one SET per triple, its own slot). */
export class EventWaiters {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  async add(
    tenantId: string,
    name: string,
    key: string,
    waiter: EventWaiter,
    expiresAt: number,
    now: number,
  ): Promise<void> {
    await this.redis.eval(
      ADD,
      1,
      this.keys.eventWaiters(tenantId, name, key),
      JSON.stringify([waiter.runId, waiter.callId]),
      String(expiresAt + 60_000),
      String(now),
    );
  }

  async claim(tenantId: string, name: string, key: string): Promise<EventWaiter[]> {
    const members = (await this.redis.eval(
      CLAIM,
      1,
      this.keys.eventWaiters(tenantId, name, key),
    )) as string[];
    return members.map((m) => {
      const [runId, callId] = JSON.parse(m) as [string, string];
      return { runId, callId };
    });
  }
}
