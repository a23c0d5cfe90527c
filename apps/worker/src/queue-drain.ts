import { Cluster } from 'ioredis';
import type { Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { RedisClient } from '@baton/runtime';
import {
  STEP_QUEUE,
  TOOL_QUEUE,
  hashTagOf,
  parseShardQueueName,
  pendingJobKeys,
  queueSlotKey,
  stepQueueName,
  toolQueueName,
  type BatonQueues,
} from '@baton/runtime/internal';

export interface QueueDrainOptions {
  readonly redis: RedisClient;
  readonly queues: BatonQueues;
  readonly taskQueue: string;
  /**
   * Other task queues of this worker's agent set, whose shards it drains too (see
   * TaskQueuePool.drainable), asked at every check.
   */
  readonly family?: () => Promise<readonly string[]>;
  /** The agents this worker runs (their queues of the per-agent layout are drained). */
  readonly agents: readonly string[];
  /** Also the legacy shared `steps` / `tools` pair (LEGACY_QUEUES). */
  readonly legacy: boolean;
  /** The queues this worker consumes anyway (its task queue's current shards). */
  readonly serving: ReadonlySet<string>;
  /** Starts a Worker on a queue to drain. */
  readonly start: (queue: string) => Worker;
  readonly logger: Logger;
}

/**
 * Queues this worker drains but does not normally consume: shards of its task queue under
 * another BATON_QUEUE_SHARDS (K changed), its agents' queues of the per-agent layout, and the
 * legacy shared pair. Each costs a BullMQ Worker (a blocking connection and polling), so one
 * runs only while the queue holds jobs still to be done: looked at when the worker starts and
 * every reconcile interval, with one multi-key EXISTS per hash tag (one in all on a standalone
 * Redis), so an idle worker pays next to nothing for them.
 */
export class QueueDrain {
  private readonly opts: QueueDrainOptions;
  private readonly draining = new Map<string, Worker>();
  private checking: Promise<void> | null = null;

  constructor(opts: QueueDrainOptions) {
    this.opts = opts;
  }

  /** Queues being drained now (tests, logs). */
  get active(): string[] {
    return [...this.draining.keys()];
  }

  /** Starts Workers on candidates that hold jobs and stops those whose queue is empty. */
  async check(): Promise<void> {
    this.checking ??= this.run().finally(() => {
      this.checking = null;
    });
    return this.checking;
  }

  private async run(): Promise<void> {
    const names = await this.candidates();
    const busy = await this.withJobs(names);
    for (const name of busy)
      if (!this.draining.has(name)) {
        this.opts.logger.info({ queue: name }, 'draining a queue of an earlier layout');
        this.draining.set(name, this.opts.start(name));
      }
    for (const [name, worker] of this.draining)
      if (!busy.has(name)) {
        this.draining.delete(name);
        await worker.close();
        this.opts.logger.info({ queue: name }, 'queue drained');
      }
  }

  private async candidates(): Promise<string[]> {
    const { queues, taskQueue, agents, legacy, serving } = this.opts;
    const mine = new Set([taskQueue, ...((await this.opts.family?.()) ?? [])]);
    const names = new Set<string>();
    for (const name of await queues.registered()) {
      const shard = parseShardQueueName(name);
      if (shard && mine.has(shard.taskQueue)) names.add(name);
    }
    for (const agent of agents) {
      names.add(stepQueueName(agent));
      names.add(toolQueueName(agent));
    }
    if (legacy) {
      names.add(STEP_QUEUE);
      names.add(TOOL_QUEUE);
    }
    for (const name of serving) names.delete(name);
    return [...names];
  }

  /** The queues among `names` that hold jobs still to be done. */
  private async withJobs(names: readonly string[]): Promise<Set<string>> {
    const { redis, queues } = this.opts;
    const pendingKeys = (name: string): string[] => pendingJobKeys(queues.queue(name));
    // One EXISTS per slot group: all of them on one Redis, one per hash tag on a cluster.
    const groups = new Map<string, string[]>();
    for (const name of names) {
      const group = redis instanceof Cluster ? hashTagOf(queueSlotKey(queues.queue(name))) : '';
      groups.set(group, [...(groups.get(group) ?? []), name]);
    }
    const busy = new Set<string>();
    for (const members of groups.values()) {
      if ((await redis.exists(...members.flatMap(pendingKeys))) === 0) continue;
      for (const name of members)
        if ((await redis.exists(...pendingKeys(name))) > 0) busy.add(name);
    }
    return busy;
  }

  async close(): Promise<void> {
    const workers = [...this.draining.values()];
    this.draining.clear();
    await Promise.all(workers.map((w) => w.close()));
  }
}
