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

  /** The task queue of an agent's runs. */
  async of(agent: string): Promise<string> {
    const mine = this.local.get(agent);
    if (mine !== undefined) return mine;
    if (Date.now() - this.fetchedAt > REFRESH_MS) await this.refresh();
    return this.known.get(agent) ?? DEFAULT_TASK_QUEUE;
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
      const taskQueue = taskQueueOfAdvert(raw);
      if (taskQueue !== null) next.set(agent, taskQueue);
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
