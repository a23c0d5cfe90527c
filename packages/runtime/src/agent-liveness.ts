import type { BatonKeys } from './redis/keys.ts';
import type { RedisClient } from './redis/scripts.ts';

const KEY_MARGIN_MS = 60_000;

/** Redis' own clock, so that workers and API instances with skewed clocks agree on expiry. */
async function redisNow(redis: RedisClient): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** One version of one agent a worker serves. */
export interface ServedVersion {
  readonly agent: string;
  readonly version: string;
}

/** Heartbeats between two refreshes of a worker's membership in its agents' sets. */
const MEMBERSHIP_BEATS = 12;

/**
 * Which workers can run an agent right now. A worker heartbeats one member of `workers:live`,
 * scored with the time its advert expires: one command per heartbeat whatever the number of its
 * agents (a worker with 31 agents used to send 93 per heartbeat). Its membership in each of its
 * agents' sets lasts MEMBERSHIP_BEATS heartbeats and is refreshed before it runs out. A worker
 * that dies simply stops heartbeating and drops out once its score passes, with nothing to clean
 * up first; expired members are trimmed by the refreshes, so a set holds at most the workers of
 * the last membership period.
 */
export class AgentLiveness {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly beats = new Map<string, number>();

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * This worker runs these agents (and these versions of them) for at least `ttlMs` more
   * (heartbeat about every ttlMs / 3), with `stepSlots` steps at a time (its WORKER_CONCURRENCY:
   * admission lends a lone fairness key the pool's idle slots, docs/fairness.md "Borrowing idle
   * slots"). Without it (a release before borrowing) the worker counts for no capacity.
   */
  async heartbeat(
    workerId: string,
    agents: readonly string[],
    ttlMs: number,
    versions: readonly ServedVersion[] = [],
    stepSlots?: number,
  ): Promise<void> {
    const now = await redisNow(this.redis);
    await this.redis.zadd(this.keys.liveWorkers, now + ttlMs, workerId);
    const beat = this.beats.get(workerId) ?? 0;
    this.beats.set(workerId, beat + 1);
    if (beat % MEMBERSHIP_BEATS !== 0) return;
    // Beats come every ttlMs / 3: a membership of ttlMs * MEMBERSHIP_BEATS / 2 outlasts the
    // refresh period twice over.
    const until = now + (ttlMs * MEMBERSHIP_BEATS) / 2;
    await this.redis.zremrangebyscore(this.keys.liveWorkers, '-inf', now - KEY_MARGIN_MS);
    if (stepSlots !== undefined) await this.advertiseSlots(workerId, stepSlots, until, now);
    // One command per key, not a pipeline: each agent's key lives in its own Cluster slot.
    const keys = [
      ...agents.map((a) => this.keys.agentWorkers(a)),
      ...versions.map((v) => this.keys.agentVersionWorkers(v.agent, v.version)),
    ];
    await Promise.all(
      keys.map(async (key) => {
        await this.redis.zadd(key, until, workerId);
        await this.redis.zremrangebyscore(key, '-inf', now);
        // The set of an agent nobody runs any more goes too; the margin keeps it past the
        // members of workers configured with a longer TTL.
        await this.redis.pexpire(key, until - now + KEY_MARGIN_MS);
      }),
    );
  }

  /** Its step slots until its membership ends; entries of workers gone a margin ago are trimmed. */
  private async advertiseSlots(
    workerId: string,
    slots: number,
    until: number,
    now: number,
  ): Promise<void> {
    const key = this.keys.workerCapacity;
    await this.redis.hset(key, workerId, `${String(slots)}\t${String(until)}`);
    const all = await this.redis.hgetall(key);
    const stale = Object.entries(all)
      .filter(([, v]) => Number(v.split('\t')[1]) < now - KEY_MARGIN_MS)
      .map(([id]) => id);
    if (stale.length > 0) await this.redis.hdel(key, ...stale);
  }

  /** The step slots of these (live) workers together; a worker that advertises none counts 0. */
  async stepSlots(workerIds: readonly string[]): Promise<number> {
    if (workerIds.length === 0) return 0;
    const values = await this.redis.hmget(this.keys.workerCapacity, ...workerIds);
    return values.reduce((sum, v) => sum + (Number(v?.split('\t')[0]) || 0), 0);
  }

  /** A worker stopping on purpose leaves at once instead of waiting for its advert to expire. */
  async leave(
    workerId: string,
    agents: readonly string[],
    versions: readonly ServedVersion[] = [],
  ): Promise<void> {
    this.beats.delete(workerId);
    await Promise.all([
      this.redis.zrem(this.keys.liveWorkers, workerId),
      this.redis.hdel(this.keys.workerCapacity, workerId),
      ...agents.map((a) => this.redis.zrem(this.keys.agentWorkers(a), workerId)),
      ...versions.map((v) =>
        this.redis.zrem(this.keys.agentVersionWorkers(v.agent, v.version), workerId),
      ),
    ]);
  }

  /** How many workers heartbeat now, whatever their agents (GET /readyz). */
  async liveCount(): Promise<number> {
    const now = await redisNow(this.redis);
    return this.redis.zcount(this.keys.liveWorkers, `(${String(now)}`, '+inf');
  }

  /** The live workers of each agent (sorted ids; an agent nobody runs maps to []). */
  async workers(agents: readonly string[]): Promise<Map<string, string[]>> {
    const result = new Map<string, string[]>();
    const lists = await this.live(agents.map((a) => this.keys.agentWorkers(a)));
    agents.forEach((agent, i) => result.set(agent, lists[i] ?? []));
    return result;
  }

  /** The live workers of each agent version, in the order asked (sorted ids). */
  async versionWorkers(versions: readonly ServedVersion[]): Promise<string[][]> {
    return this.live(versions.map((v) => this.keys.agentVersionWorkers(v.agent, v.version)));
  }

  /** The members of these membership sets whose heartbeat is current. */
  private async live(keys: readonly string[]): Promise<string[][]> {
    if (keys.length === 0) return [];
    const now = await redisNow(this.redis);
    const lists = await Promise.all(
      keys.map((key) => this.redis.zrangebyscore(key, `(${String(now)}`, '+inf')),
    );
    const members = [...new Set(lists.flat())];
    const scores =
      members.length === 0 ? [] : await this.redis.zmscore(this.keys.liveWorkers, ...members);
    const live = new Set(members.filter((_, i) => Number(scores[i] ?? 0) > now));
    return lists.map((list) => list.filter((w) => live.has(w)).sort());
  }
}
