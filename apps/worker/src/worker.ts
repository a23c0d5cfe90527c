import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { Worker, type ConnectionOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { AgentDefinition, Clock } from '@baton/core';
import type { Logger } from 'pino';
import { AgentRegistry } from './agent-registry.ts';
import type { WorkerConfig } from './config.ts';
import { AbortRegistry, listenForControl } from './control-channel.ts';
import { BatonQueues, STEP_QUEUE, TOOL_QUEUE, bullPrefix } from './queues.ts';
import { Reconciler } from './reconciler.ts';
import { BatonKeys } from './redis/keys.ts';
import { RedisRunStore } from './redis/redis-run-store.ts';
import { RedisThreadStore } from './redis/thread-store.ts';
import { RunCommitter } from './run-committer.ts';
import { RunLeases } from './run-lease.ts';
import { StepProcessor } from './step-processor.ts';
import { systemClock } from './system-clock.ts';
import { ToolProcessor } from './tool-processor.ts';
import { ToolResultMailbox } from './tool-results.ts';
import type { WorkerDeps } from './worker-deps.ts';
import { RunService } from './run-service.ts';

export interface BatonWorkerOptions {
  readonly config: WorkerConfig;
  readonly agents: readonly AgentDefinition[];
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly probe?: WorkerDeps['probe'];
}

/** Connections and stores shared by a worker process and the API (no job processing). */
export class BatonRuntime {
  readonly redis: Redis;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly queues: BatonQueues;
  readonly committer: RunCommitter;
  readonly service: RunService;
  readonly connection: ConnectionOptions;
  readonly clock: Clock;

  constructor(
    config: Pick<
      WorkerConfig,
      'REDIS_URL' | 'BATON_PREFIX' | 'EVENT_RETENTION_SECONDS' | 'TOOL_ATTEMPTS'
    >,
    logger: Logger,
    clock: Clock = systemClock,
  ) {
    this.clock = clock;
    // BullMQ needs maxRetriesPerRequest: null on its blocking connections; we use it everywhere.
    this.redis = new Redis(config.REDIS_URL, {
      maxRetriesPerRequest: null,
      connectionName: 'baton',
    });
    this.redis.on('error', (err) => logger.error({ err }, 'redis error'));
    this.connection = { url: config.REDIS_URL, maxRetriesPerRequest: null };
    this.keys = new BatonKeys(config.BATON_PREFIX);
    const now = (): number => clock.now();
    this.store = new RedisRunStore({
      redis: this.redis,
      prefix: config.BATON_PREFIX,
      now,
      retentionSeconds: config.EVENT_RETENTION_SECONDS,
    });
    this.threads = new RedisThreadStore({ redis: this.redis, prefix: config.BATON_PREFIX, now });
    this.queues = new BatonQueues({
      connection: this.connection,
      prefix: config.BATON_PREFIX,
      toolAttempts: config.TOOL_ATTEMPTS,
    });
    for (const q of [this.queues.steps, this.queues.tools])
      q.on('error', (err) => logger.error({ err, queue: q.name }, 'queue error'));
    this.queues.flows.on('error', (err) => logger.error({ err }, 'flow producer error'));
    this.committer = new RunCommitter({
      store: this.store,
      threads: this.threads,
      queues: this.queues,
      redis: this.redis,
      keys: this.keys,
      now,
      logger,
    });
    this.service = new RunService({
      redis: this.redis,
      keys: this.keys,
      store: this.store,
      threads: this.threads,
      queues: this.queues,
      committer: this.committer,
      clock,
    });
  }

  async close(): Promise<void> {
    await this.queues.close();
    await this.redis.quit().catch(() => undefined);
  }
}

/**
 * A worker process: pulls step and tool jobs, advertises its agents, listens for cancellations,
 * reconciles stuck runs, and shuts down gracefully.
 */
export class BatonWorker {
  readonly id: string;
  readonly runtime: BatonRuntime;
  readonly registry: AgentRegistry;
  readonly aborts = new AbortRegistry();
  private readonly opts: BatonWorkerOptions;
  private readonly logger: Logger;
  private stepWorker?: Worker;
  private toolWorker?: Worker;
  private controlSubscriber?: Redis;
  private timers: NodeJS.Timeout[] = [];
  private reconciler?: Reconciler;

  constructor(opts: BatonWorkerOptions) {
    this.opts = opts;
    this.id = opts.config.WORKER_ID ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.logger = opts.logger.child({ workerId: this.id });
    this.runtime = new BatonRuntime(opts.config, this.logger, opts.clock);
    this.registry = new AgentRegistry(opts.agents);
  }

  async start(): Promise<void> {
    const { config } = this.opts;
    const rt = this.runtime;
    const deps: WorkerDeps = {
      redis: rt.redis,
      keys: rt.keys,
      store: rt.store,
      threads: rt.threads,
      committer: rt.committer,
      leases: new RunLeases(rt.redis, rt.keys, config.LEASE_TTL_MS),
      mailbox: new ToolResultMailbox(rt.redis, rt.keys),
      queues: rt.queues,
      registry: this.registry,
      aborts: this.aborts,
      clock: rt.clock,
      logger: this.logger,
      ...(this.opts.probe ? { probe: this.opts.probe } : {}),
    };
    await this.registry.advertise(rt.redis, rt.keys, this.id, rt.clock.now());
    this.controlSubscriber = rt.redis.duplicate({ connectionName: 'baton-control' });
    this.controlSubscriber.on('error', (err) =>
      this.logger.error({ err }, 'control subscriber error'),
    );
    await listenForControl(this.controlSubscriber, rt.keys, this.aborts, (err) =>
      this.logger.warn({ err }, 'bad control message'),
    );

    const steps = new StepProcessor(deps);
    const tools = new ToolProcessor(deps);
    const common = {
      connection: rt.connection,
      prefix: bullPrefix(config.BATON_PREFIX),
      lockDuration: config.JOB_LOCK_MS,
      stalledInterval: config.STALLED_INTERVAL_MS,
      maxStalledCount: 2,
    };
    this.stepWorker = new Worker(STEP_QUEUE, (job, token) => steps.process(job, token), {
      ...common,
      concurrency: config.WORKER_CONCURRENCY,
    });
    this.toolWorker = new Worker(TOOL_QUEUE, (job) => tools.process(job), {
      ...common,
      concurrency: config.TOOL_CONCURRENCY,
    });
    for (const w of [this.stepWorker, this.toolWorker]) {
      w.on('error', (err) => this.logger.error({ err, queue: w.name }, 'worker error'));
      w.on('failed', (job, err) =>
        this.logger.warn(
          {
            err,
            jobId: job?.id,
            queue: w.name,
            runId: (job?.data as { runId?: string } | undefined)?.runId,
          },
          'job failed',
        ),
      );
    }
    this.timers.push(
      setInterval(() => {
        this.registry
          .advertise(rt.redis, rt.keys, this.id, rt.clock.now())
          .catch((err: unknown) => this.logger.warn({ err }, 'advertise failed'));
      }, 15_000),
    );
    if (config.RECONCILER) {
      this.reconciler = new Reconciler({
        redis: rt.redis,
        keys: rt.keys,
        store: rt.store,
        queues: rt.queues,
        committer: rt.committer,
        logger: this.logger,
        now: () => rt.clock.now(),
        staleAfterMs: Math.max(config.LEASE_TTL_MS * 2, 1_000),
      });
      this.timers.push(
        setInterval(() => {
          this.reconciler
            ?.scan()
            .catch((err: unknown) => this.logger.warn({ err }, 'reconcile failed'));
        }, config.RECONCILE_INTERVAL_MS),
      );
    }
    for (const t of this.timers) t.unref();
    await Promise.all([this.stepWorker.waitUntilReady(), this.toolWorker.waitUntilReady()]);
    this.logger.info(
      { agents: this.registry.list().map((a) => a.name), concurrency: config.WORKER_CONCURRENCY },
      'worker started',
    );
  }

  /** Runs one reconciler scan now (tests, admin). */
  async reconcile(): Promise<string[]> {
    return this.reconciler ? this.reconciler.scan() : [];
  }

  /**
   * Graceful stop: take no new jobs, let in-flight ones finish within the grace period, then
   * abort what is left. Aborted work is not lost: its job is retried elsewhere and its run's
   * checkpoint is untouched by the aborted attempt.
   */
  async stop(graceMs = this.opts.config.SHUTDOWN_GRACE_MS): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    const workers = [this.stepWorker, this.toolWorker].filter((w): w is Worker => w !== undefined);
    const closing = Promise.all(workers.map((w) => w.close()));
    const timedOut = await Promise.race([
      closing.then(() => false),
      new Promise<boolean>((resolve) => setTimeout(resolve, graceMs, true).unref()),
    ]);
    if (timedOut) {
      this.logger.warn({ graceMs }, 'grace period over; aborting in-flight work');
      this.aborts.abortAll('worker shutting down');
      await Promise.all(workers.map((w) => w.close(true)));
    }
    await this.controlSubscriber?.quit().catch(() => undefined);
    await this.runtime.close();
    this.logger.info('worker stopped');
  }
}
