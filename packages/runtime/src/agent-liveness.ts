import type { BatonKeys } from './redis/keys.ts';
import type { RedisClient } from './redis/scripts.ts';

const KEY_MARGIN_MS = 60_000;

/** Redis' own clock, so that workers and API instances with skewed clocks agree on expiry. */
async function redisNow(redis: RedisClient): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * Which workers can run an agent right now. Each worker heartbeats one ZSET member per agent it
 * registered, scored with the time its advert expires; a worker that dies simply stops
 * heartbeating and drops out once its score passes, with nothing to clean up first. Expired
 * members are trimmed by the heartbeats themselves, so a ZSET holds at most the workers of the
 * last TTL.
 */
export class AgentLiveness {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** This worker runs these agents for at least `ttlMs` more. */
  async heartbeat(workerId: string, agents: readonly string[], ttlMs: number): Promise<void> {
    const now = await redisNow(this.redis);
    // One command per key, not a pipeline: each agent's key lives in its own Cluster slot.
    await Promise.all(
      agents.map(async (agent) => {
        const key = this.keys.agentWorkers(agent);
        await this.redis.zadd(key, now + ttlMs, workerId);
        await this.redis.zremrangebyscore(key, '-inf', now);
        // The set of an agent nobody runs any more goes too; the margin keeps it past the
        // members of workers configured with a longer TTL.
        await this.redis.pexpire(key, ttlMs + KEY_MARGIN_MS);
      }),
    );
  }

  /** A worker stopping on purpose leaves at once instead of waiting for its advert to expire. */
  async leave(workerId: string, agents: readonly string[]): Promise<void> {
    await Promise.all(agents.map((a) => this.redis.zrem(this.keys.agentWorkers(a), workerId)));
  }

  /** The live workers of each agent (sorted ids; an agent nobody runs maps to []). */
  async workers(agents: readonly string[]): Promise<Map<string, string[]>> {
    const result = new Map<string, string[]>();
    if (agents.length === 0) return result;
    const now = await redisNow(this.redis);
    const lists = await Promise.all(
      agents.map((a) =>
        this.redis.zrangebyscore(this.keys.agentWorkers(a), `(${String(now)}`, '+inf'),
      ),
    );
    agents.forEach((agent, i) => result.set(agent, [...(lists[i] ?? [])].sort()));
    return result;
  }
}
