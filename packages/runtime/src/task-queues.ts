import { DEFAULT_TASK_QUEUE, TASK_QUEUE_NAME } from './queue-shards.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { RedisClient } from './redis/scripts.ts';

/** How long a lookup of the adverts is reused (an agent that moves is seen within this). */
const REFRESH_MS = 3_000;

/**
 * Which task queue (a pool of workers, BATON_TASK_QUEUE) serves each agent, from the workers'
 * adverts: producers read it for every job, so it is cached and read again at most every few
 * seconds. A worker knows its own agents' task queue; an agent nobody advertised goes to
 * `default`.
 */
export class TaskQueueDirectory {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly local = new Map<string, string>();
  private known = new Map<string, string>();
  private fetchedAt = -Infinity;
  private pending: Promise<void> | null = null;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** This process serves these agents on `taskQueue` (a worker): no lookup for them. */
  serve(agents: readonly string[], taskQueue: string): void {
    for (const agent of agents) this.local.set(agent, taskQueue);
  }

  /**
   * The task queue of an agent's runs. An agent the last lookup did not know is read from Redis
   * at once (one HGET): its first advert may be newer than the lookup, and answering `default`
   * for it put its first runs in a queue no worker of it serves (issue 32). An agent with no
   * advert at all pays that read on every call; producers only route agents that advertised.
   */
  async of(agent: string): Promise<string> {
    const mine = this.local.get(agent);
    if (mine !== undefined) return mine;
    if (Date.now() - this.fetchedAt > REFRESH_MS) await this.refresh();
    const known = this.known.get(agent);
    if (known !== undefined) return known;
    const raw = await this.redis.hget(this.keys.agentsKey(), agent);
    if (raw === null) return DEFAULT_TASK_QUEUE;
    const taskQueue = taskQueueOfAdvert(raw) ?? DEFAULT_TASK_QUEUE;
    this.known.set(agent, taskQueue);
    return taskQueue;
  }

  /**
   * An advert the caller has just read (creating a run reads its agent's): what it names is the
   * newest there is, so the run's first job goes where the agent is served now, not where a
   * cached lookup of up to 3 s ago said (the agent may have moved to another task queue).
   */
  learn(agent: string, taskQueue: string | undefined): void {
    if (this.local.has(agent)) return;
    this.known.set(
      agent,
      taskQueue !== undefined && TASK_QUEUE_NAME.test(taskQueue) ? taskQueue : DEFAULT_TASK_QUEUE,
    );
  }

  /** The task queue the adverts name for the agent now (read again), ignoring this process. */
  async advertised(agent: string): Promise<string> {
    await this.refresh(true);
    return this.known.get(agent) ?? DEFAULT_TASK_QUEUE;
  }

  private async refresh(force = false): Promise<void> {
    if (force) this.fetchedAt = -Infinity;
    this.pending ??= this.read().finally(() => {
      this.pending = null;
    });
    await this.pending;
  }

  private async read(): Promise<void> {
    const all = await this.redis.hgetall(this.keys.agentsKey());
    const next = new Map<string, string>();
    for (const [agent, raw] of Object.entries(all)) {
      // An advert without a task queue (a worker of a version before routing) is `default`:
      // known, so that its agent is not read again on every call.
      next.set(agent, taskQueueOfAdvert(raw) ?? DEFAULT_TASK_QUEUE);
    }
    this.known = next;
    this.fetchedAt = Date.now();
  }
}

function taskQueueOfAdvert(raw: string): string | null {
  try {
    const { taskQueue } = JSON.parse(raw) as { taskQueue?: unknown };
    return typeof taskQueue === 'string' && TASK_QUEUE_NAME.test(taskQueue) ? taskQueue : null;
  } catch {
    return null;
  }
}
