import { createHash } from 'node:crypto';
import type { BatonKeys } from './redis/keys.ts';
import { defineScript, type LuaScript, type RedisClient } from './redis/scripts.ts';

/** KEYS: pool   ARGV: signature, ttlMs   Reply: 1 the task queue is this set's | 0 another's */
type ClaimScript = LuaScript<[pool: string], [signature: string, ttlMs: number], number>;
const CLAIM = `
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

/** KEYS: pool   ARGV: signature   Reply: 1 released | 0 held by another set or by none */
type ReleaseScript = LuaScript<[pool: string], [signature: string], number>;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** A short, stable name for a set of agents (order and repeats do not matter). */
function agentSetSignature(agents: readonly string[]): string {
  const names = [...new Set(agents)].sort();
  return createHash('sha256').update(names.join('\n')).digest('hex').slice(0, 8);
}

/**
 * The task queue of a pool whose agents differ from those of the pool that holds `base`: `base`
 * and the signature of its agents, within the 64 characters a task queue name may have.
 */
function derivedTaskQueue(base: string, agents: readonly string[]): string {
  return `${base.slice(0, 55)}-${agentSetSignature(agents)}`;
}

/**
 * Which set of agents a task queue (BATON_TASK_QUEUE) serves. A job is taken by any worker of
 * its queue, so every worker of one queue must run the same agents: two pools with different
 * agents on one task queue took each other's jobs and put them back, 2 s a time (issue 32: a
 * 57 s check took 6 min). The first set to start on a task queue holds it (a key with the
 * set's signature, refreshed with the workers' heartbeat, gone AGENT_HEARTBEAT_TTL_MS after the
 * last of them); a worker whose agents differ serves them on a task queue of its own,
 * `<task queue>-<signature>`, and says so. Its adverts name that queue, so producers route its
 * agents' runs there and no job reaches a worker that cannot run it, whatever the configuration.
 */
export class TaskQueuePool {
  readonly base: string;
  readonly signature: string;
  /** The task queue this worker serves: `base` when its set holds it, else the derived one. */
  taskQueue: string;
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly ttlMs: number;
  private readonly claimScript: ClaimScript;
  private readonly releaseScript: ReleaseScript;
  private readonly derived: string;

  constructor(
    redis: RedisClient,
    keys: BatonKeys,
    base: string,
    agents: readonly string[],
    ttlMs: number,
  ) {
    this.redis = redis;
    this.keys = keys;
    this.base = base;
    this.ttlMs = ttlMs;
    this.signature = agentSetSignature(agents);
    this.derived = derivedTaskQueue(base, agents);
    this.taskQueue = base;
    this.claimScript = defineScript(redis, 'batonTaskQueueClaim', 1, CLAIM);
    this.releaseScript = defineScript(redis, 'batonTaskQueueRelease', 1, RELEASE);
  }

  /** Whether this worker serves a task queue other than the one it was configured with. */
  get moved(): boolean {
    return this.taskQueue !== this.base;
  }

  /** At start: the task queue to serve (held by this set, or the set's own). */
  async resolve(): Promise<string> {
    this.taskQueue = (await this.claim(this.base)) ? this.base : this.derived;
    return this.taskQueue;
  }

  /**
   * With each heartbeat: keeps `base` this set's while any of its workers lives. False when
   * another set holds it now (this set's workers were all gone for a whole TTL meanwhile).
   */
  async refresh(): Promise<boolean> {
    return this.moved ? true : this.claim(this.base);
  }

  /**
   * Other task queues holding jobs of this set's agents, to drain: the derived queue (some
   * workers of this set served there) and `base` when no other set holds it (this set's workers
   * served there before).
   */
  async drainable(): Promise<string[]> {
    if (!this.moved) return [this.derived];
    const held = await this.redis.get(this.keys.taskQueuePool(this.base));
    return held === null || held === this.signature ? [this.base] : [];
  }

  /**
   * The last worker of this set stopping on purpose frees `base` at once (`npm start`'s watch
   * mode restarts its worker with other agents: that one takes `base`, not a queue of its own).
   */
  async release(): Promise<void> {
    if (!this.moved)
      await this.releaseScript([this.keys.taskQueuePool(this.base)], [this.signature]);
  }

  private async claim(taskQueue: string): Promise<boolean> {
    const key = this.keys.taskQueuePool(taskQueue);
    return (await this.claimScript([key], [this.signature, this.ttlMs])) === 1;
  }
}
