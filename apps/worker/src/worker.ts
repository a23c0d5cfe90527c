import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { DelayedError, WaitingChildrenError, Worker, type Job } from 'bullmq';
import type { AgentDefinition, Clock } from '@baton/core';
import type { Logger } from 'pino';
import { BatonRuntime, type RedisClient } from '@baton/runtime';
import {
  AbortRegistry,
  AgentLiveness,
  AgentRegistry,
  agentVersionOf,
  versioningOf,
  RunLeases,
  STEP_QUEUE,
  TaskQueuePool,
  SUBSCRIBER_OPTIONS,
  TOOL_QUEUE,
  coalesceBullWrites,
  bullTelemetryOption,
  duplicateClient,
  listenForControl,
  BLOCKING_RECONNECTED,
  wakeQueue,
  workerBackend,
  ToolResultMailbox,
  TimerSweeper,
  deadlineTimerHandler,
} from '@baton/runtime/internal';
import type { WorkerConfig } from './config.ts';
import { onJobFailed } from './job-failures.ts';
import { LegacyQueueForwarder } from './legacy-queues.ts';
import { Reconciler, type ScanReport } from './reconciler.ts';
import { StepProcessor } from './step-processor.ts';
import { ToolProcessor } from './tool-processor.ts';
import { ScheduleWorker } from './schedule-worker.ts';
import { StallAccounting, controlConnectionName } from './stall-accounting.ts';
import { MessageCache } from './message-cache.ts';
import type { WorkerDeps } from './worker-deps.ts';
import { traceAgents } from './tracing.ts';
import { QueueDrain } from './queue-drain.ts';
import { releaseOrphanedJobs } from './orphaned-jobs.ts';
import { RunJobs } from './run-jobs.ts';
import { startWebhookDelivery } from './webhooks/webhook-worker.ts';
import { startArchiving } from './archive-loop.ts';

/** How long a stop waits for connections to close after the grace period before it cuts them. */
const CLOSE_WAIT_MS = 2_000;

/** Whether `work` is still unfinished after `ms` (it goes on; its failure is ignored). */
async function outlasts(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.then(
        () => false,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(resolve, ms, true);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** How often an idle Worker on a run queue polls (seconds); see runQueueWorker. */
const IDLE_POLL_SECONDS = 30;

/**
 * The stall check of each run queue. Every queue's check is a script of half a dozen commands
 * per interval even when idle, so above 8 shards the interval grows with K: the process's
 * stall checks cost what 8 shards cost, and a job whose worker died is taken over within
 * JOB_LOCK_MS + STALLED_INTERVAL_MS * K / 8 instead of JOB_LOCK_MS + STALLED_INTERVAL_MS.
 */
export function shardStalledInterval(stalledIntervalMs: number, shards: number): number {
  return Math.round(stalledIntervalMs * Math.max(1, shards / 8));
}

export interface BatonWorkerOptions {
  readonly config: WorkerConfig;
  readonly agents: readonly AgentDefinition[];
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly probe?: WorkerDeps['probe'];
  /** The caller's own ioredis client or Cluster; config.REDIS_URL is then ignored. */
  readonly redis?: RedisClient;
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
  /** The task queue this worker serves (BATON_TASK_QUEUE, or its pool's own; see start()). */
  taskQueue: string;
  private readonly opts: BatonWorkerOptions;
  private readonly logger: Logger;
  /**
   * BullMQ workers: one per shard of this worker's task queue, the schedule and webhook queues,
   * and those draining queues of earlier layouts while they hold jobs.
   */
  private bullWorkers: Worker[] = [];
  private drain?: QueueDrain;
  private liveness?: AgentLiveness;
  private pool?: TaskQueuePool;
  private controlSubscriber?: RedisClient;
  private timers: NodeJS.Timeout[] = [];
  private reconciler?: Reconciler;
  private schedules?: ScheduleWorker;
  /** Sweeps the shared timer index; other modules register their timer kinds on it (on()). */
  timerSweeper?: TimerSweeper;

  constructor(opts: BatonWorkerOptions) {
    this.opts = opts;
    this.id = opts.config.WORKER_ID ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.taskQueue = opts.config.BATON_TASK_QUEUE;
    this.logger = opts.logger.child({ workerId: this.id });
    this.runtime = new BatonRuntime({
      config: opts.config,
      logger: this.logger,
      clock: opts.clock,
      role: 'worker',
      redis: opts.redis,
    });
    // Tracing: models and tools decorated with spans (the same agents when it is off).
    this.registry = new AgentRegistry(traceAgents(opts.agents));
  }

  async start(): Promise<void> {
    const { config } = this.opts;
    const rt = this.runtime;
    const messages = new MessageCache(undefined, config.MESSAGE_CACHE_MAX_BYTES);
    // Whatever this process kept of the runs' message lists may be ahead of a Redis that comes
    // back (a restart from a truncated AOF, a failover): a dropped connection forgets it all.
    rt.redis.on('close', () => messages.invalidate());
    rt.redis.on('-node', () => messages.invalidate());
    const deps: WorkerDeps = {
      redis: rt.redis,
      keys: rt.keys,
      store: rt.store,
      threads: rt.threads,
      committer: rt.committer,
      leases: new RunLeases(rt.redis, rt.keys, config.LEASE_TTL_MS, rt.store),
      mailbox: new ToolResultMailbox(rt.redis, rt.keys, config.EVENT_RETENTION_SECONDS),
      messages,
      children: rt.children,
      waits: rt.waits,
      deltas: { windowMs: config.DELTA_WINDOW_MS, maxChars: config.DELTA_MAX_CHARS },
      queues: rt.queues,
      registry: this.registry,
      aborts: this.aborts,
      clock: rt.clock,
      logger: this.logger,
      ...(this.opts.probe ? { probe: this.opts.probe } : {}),
    };
    if (this.opts.probe) rt.children.probe = this.opts.probe;
    await rt.checkRedis();
    const agentNames = this.registry.list().map((a) => a.name);
    const liveness = new AgentLiveness(rt.redis, rt.keys);
    this.liveness = liveness;
    const ttl = config.AGENT_HEARTBEAT_TTL_MS;
    // Every worker of a task queue must run the same agents: a worker whose agents differ from
    // those of the workers already on BATON_TASK_QUEUE serves them on a queue of its own.
    // Versions are part of the set: a worker serving another version of an agent gets a queue of
    // its own (`<task queue>-<signature>`), so no job of a pinned run reaches other code.
    const served = this.registry.list().map((a) => ({
      agent: a.name,
      version: agentVersionOf(a),
      versioning: versioningOf(a),
    }));
    const pool = new TaskQueuePool(
      rt.redis,
      rt.keys,
      config.BATON_TASK_QUEUE,
      served.map((v) => `${v.agent}@${v.version}`),
      ttl,
    );
    this.pool = pool;
    const taskQueue = await pool.resolve();
    this.taskQueue = taskQueue;
    if (pool.moved)
      this.logger.warn(
        { configured: pool.base, taskQueue, agents: agentNames },
        `task queue ${pool.base} is served by workers of other agents: this worker serves its ` +
          `agents on task queue ${taskQueue}, so no job reaches a worker that cannot run it ` +
          '(give each pool its own BATON_TASK_QUEUE to choose the name)',
      );
    rt.queues.versions.serve(served, taskQueue);
    let warnedLost = false;
    const advertise = async (): Promise<void> => {
      if (!(await pool.refresh()) && !warnedLost) {
        warnedLost = true;
        this.logger.warn(
          { taskQueue },
          `workers of other agents took task queue ${taskQueue} while this pool's claim had lapsed; restart this pool's workers to move them to a queue of their own`,
        );
      }
      await this.registry.advertise(rt.redis, rt.keys, this.id, rt.clock.now(), taskQueue);
      await rt.queues.versions.advertise(rt.clock.now(), taskQueue);
      await liveness.heartbeat(
        this.id,
        agentNames,
        ttl,
        rt.queues.versions.served(),
        config.WORKER_CONCURRENCY,
      );
      // Runs parked while no worker served these versions get their jobs now.
      const woken = await rt.queues.versions.wake((target, reason, version) =>
        rt.queues.enqueueStep(target, reason, version),
      );
      if (woken > 0) this.logger.info({ woken }, 'runs waiting for this agent version resumed');
    };
    await advertise();
    this.controlSubscriber = duplicateClient(rt.redis, {
      ...SUBSCRIBER_OPTIONS,
      // Named after this worker: others tell it is alive by this connection (StallAccounting).
      connectionName: controlConnectionName(this.id),
    });
    this.controlSubscriber.on('error', (err) => {
      if (!rt.outage.connectionError(err, 'control'))
        this.logger.error({ err }, 'control subscriber error');
    });
    await listenForControl(this.controlSubscriber, rt.keys, this.aborts, (err) =>
      this.logger.warn({ err }, 'bad control message'),
    );

    const steps = new StepProcessor(deps);
    const tools = new ToolProcessor(deps);
    // Losing the worker is not the job's failure: it is retried until its workers died more than
    // MAX_STALLS times, then given up with a reason that says so (see job-failures.ts). Only a
    // dead worker counts (StallAccounting); BullMQ's own count of lost locks is a backstop.
    const stalls = new StallAccounting({
      redis: rt.redis,
      keys: rt.keys,
      workerId: this.id,
      maxStalls: config.MAX_STALLS,
      logger: this.logger,
    });
    const common = {
      connection: rt.connection,
      lockDuration: config.JOB_LOCK_MS,
      stalledInterval: config.STALLED_INTERVAL_MS,
      maxStalledCount: StallAccounting.bullBackstop(config.MAX_STALLS),
      ...bullTelemetryOption(),
    };
    // This worker's agents' runs go to its own task queue, with no lookup (its advert says so
    // to every other producer).
    rt.queues.taskQueues.serve(agentNames, taskQueue);
    const jobs = new RunJobs({
      deps,
      taskQueue,
      steps,
      tools,
      stalls,
      stepConcurrency: config.WORKER_CONCURRENCY,
      toolConcurrency: config.TOOL_CONCURRENCY,
    });
    const runQueueWorker = (name: string): Worker => {
      // The jobs this Worker fetched and has not finished (see orphaned-jobs.ts): a job leaves
      // when it completes or fails, or when its processor moved it to delayed or to wait for
      // its children (BullMQ says nothing then).
      const seen = new Set<string>();
      const processJob = async (job: Job, token?: string): Promise<unknown> => {
        try {
          return await jobs.process(job, token);
        } catch (error) {
          if (error instanceof DelayedError || error instanceof WaitingChildrenError)
            seen.delete(job.id ?? '');
          throw error;
        }
      };
      const worker = new Worker(
        name,
        processJob,
        {
          ...common,
          prefix: rt.queues.prefixOf(name),
          concurrency: jobs.perQueueConcurrency,
          // BullMQ wakes a blocked Worker through the queue's marker as soon as a job is added or
          // a delayed one is due, so this only sets how often an idle Worker asks again.
          drainDelay: IDLE_POLL_SECONDS,
          stalledInterval: shardStalledInterval(config.STALLED_INTERVAL_MS, rt.queues.shards),
        },
        workerBackend,
      );
      this.watch(worker, deps);
      // A stalled job put back in wait does not wake the Workers blocked on the queue's marker
      // (every process's, this one's included): they would take it only at their next idle poll,
      // up to IDLE_POLL_SECONDS later (worker-fencing: a frozen worker's run stood 30 s). The
      // Worker that moved it sets the marker, as adding a job does.
      const queue = rt.queues.queue(name);
      worker.on('stalled', () => {
        wakeQueue(rt.redis, queue).catch((err: unknown) => {
          this.logger.warn({ err, queue: name }, 'could not wake the workers of a queue');
        });
      });
      worker.on('active', (job) => seen.add(job.id ?? ''));
      const finished = (job: Job | undefined): void => {
        if (job?.id !== undefined) seen.delete(job.id);
      };
      worker.on('completed', finished);
      worker.on('failed', finished);
      // A cluster master failed over: a job whose fetch reply was lost with it would wait for
      // its lock to expire; it goes back to wait now.
      worker.getBackend().on(BLOCKING_RECONNECTED, () => {
        releaseOrphanedJobs({ redis: rt.redis, worker, queue, seen, lockMs: config.JOB_LOCK_MS })
          .then((released) => {
            if (released > 0)
              this.logger.warn(
                { queue: name, released },
                'jobs whose fetch was lost in a failover went back to wait',
              );
          })
          .catch((err: unknown) => {
            this.logger.warn({ err, queue: name }, 'could not look for jobs lost in a failover');
          });
      });
      return worker;
    };
    // Routing: this worker takes the K shard queues of its task queue, whatever its agents
    // (a BullMQ Worker per shard, not two per agent: connections and idle polling stay bounded).
    const serving = rt.queues.shardQueues(taskQueue).map((q) => q.name);
    for (const name of serving) this.bullWorkers.push(runQueueWorker(name));
    // Forwarding only (no agent to ask about): BullMQ counts their lost locks itself.
    const legacy = new LegacyQueueForwarder(deps);
    this.drain = new QueueDrain({
      redis: rt.redis,
      queues: rt.queues,
      taskQueue,
      family: () => pool.drainable(),
      agents: agentNames,
      legacy: config.LEGACY_QUEUES,
      serving: new Set(serving),
      logger: this.logger,
      start: (name) => {
        const worker =
          name === STEP_QUEUE || name === TOOL_QUEUE
            ? new Worker(
                name,
                (job) => (name === STEP_QUEUE ? legacy.step(job) : legacy.tool(job)),
                {
                  ...common,
                  prefix: rt.queues.prefixOf(name),
                  concurrency: jobs.perQueueConcurrency,
                  maxStalledCount: config.MAX_STALLS,
                },
                workerBackend,
              )
            : runQueueWorker(name);
        if (name === STEP_QUEUE || name === TOOL_QUEUE) this.watch(worker, deps);
        this.bullWorkers.push(worker);
        return worker;
      },
    });
    await this.drain.check();
    // Scheduled runs: its own queue and handlers (see schedule-worker.ts).
    if (config.SCHEDULES) {
      this.schedules = new ScheduleWorker(rt, config, this.logger);
      const worker = this.schedules.start();
      coalesceBullWrites(worker);
      this.bullWorkers.push(worker);
    }
    // Webhooks (webhooks/): their own queue, backoff and sweeper; added after the handlers
    // above, which are for run jobs.
    if (this.opts.probe) rt.webhooks.probe = this.opts.probe;
    const webhooks = startWebhookDelivery(rt, config, this.logger);
    if (webhooks) {
      this.bullWorkers.push(webhooks.worker as Worker);
      this.timers.push(webhooks.sweeper);
    }
    // ARCHIVE_URL: finished runs into PostgreSQL (one process at a time, under a lock).
    if (this.opts.probe && rt.archiver) rt.archiver.probe = this.opts.probe;
    const archiving = startArchiving(rt, config, this.logger);
    if (archiving) this.timers.push(archiving);
    this.timers.push(
      setInterval(
        () => {
          advertise().catch((err: unknown) => this.logger.warn({ err }, 'advertise failed'));
        },
        Math.max(Math.floor(ttl / 3), 50),
      ),
    );
    // Queues of an earlier layout or K are looked at again every reconcile interval (whether
    // or not this worker reconciles): cheap, one EXISTS per hash tag.
    this.timers.push(
      setInterval(() => {
        this.drain
          ?.check()
          .catch((err: unknown) => this.logger.warn({ err }, 'queue drain check failed'));
      }, config.RECONCILE_INTERVAL_MS),
    );
    if (config.RECONCILER) {
      this.reconciler = new Reconciler({
        redis: rt.redis,
        keys: rt.keys,
        store: rt.store,
        queues: rt.queues,
        committer: rt.committer,
        children: rt.children,
        admission: rt.admission,
        waits: rt.waits,
        logger: this.logger,
        now: () => rt.clock.now(),
        staleAfterMs: Math.max(config.LEASE_TTL_MS * 2, 1_000),
        batch: config.RECONCILE_BATCH,
        maxWaitMs: config.RUN_MAX_WAIT_SECONDS * 1000,
        lockMs: Math.max(config.RECONCILE_INTERVAL_MS * 3, 5_000),
        // A quarter of the retention late at most, and no more than every 5 minutes.
        cleanEveryMs: Math.min(config.JOB_RETENTION_SECONDS * 250, 300_000),
      });
      this.timers.push(
        setInterval(() => {
          this.reconciler
            ?.scan()
            .catch((err: unknown) => this.logger.warn({ err }, 'reconcile failed'));
        }, config.RECONCILE_INTERVAL_MS),
      );
    }
    // Timers (deadlines, durable sleeps, and any kind a module registers on `timerSweeper`):
    // every live worker sweeps the index, so a waiting run holds no job and no worker.
    this.timerSweeper = new TimerSweeper({
      index: rt.timers,
      now: () => rt.clock.now(),
      logger: this.logger,
      intervalMs: config.TIMER_SWEEP_INTERVAL_MS,
      batch: config.TIMER_BATCH,
      leaseMs: config.TIMER_CLAIM_MS,
    }).on('deadline', deadlineTimerHandler(rt.service));
    this.timerSweeper.start();
    for (const t of this.timers) t.unref();
    await Promise.all(this.bullWorkers.map((w) => w.waitUntilReady()));
    this.logger.info(
      {
        agents: this.registry.list().map((a) => a.name),
        concurrency: config.WORKER_CONCURRENCY,
        taskQueue,
        shards: rt.queues.shards,
      },
      'worker started',
    );
  }

  /** Error and failure handling of a Worker on a run queue. */
  private watch(w: Worker, deps: WorkerDeps): void {
    const rt = this.runtime;
    // A job's completion and the next fetch, and what several jobs send in one turn, go out
    // in one write (see coalesceBullWrites).
    coalesceBullWrites(w);
    w.on('error', (err) => {
      if (!rt.outage.connectionError(err, w.name))
        this.logger.error({ err, queue: w.name }, 'worker error');
    });
    w.on('failed', (job, err) => {
      if (!job) return;
      onJobFailed(deps, w.name, job, err).catch((e: unknown) =>
        this.logger.warn({ err: e, jobId: job.id }, 'could not handle a failed job'),
      );
    });
  }

  /** Runs one reconciler scan now (tests, admin); null when this worker runs no reconciler. */
  async reconcile(): Promise<ScanReport | null> {
    return this.reconciler ? this.reconciler.scan() : null;
  }

  /**
   * Graceful stop: take no new jobs, let in-flight ones finish within the grace period, then
   * abort what is left. Aborted work is not lost: its job is retried elsewhere and its run's
   * checkpoint is untouched by the aborted attempt.
   */
  async stop(graceMs = this.opts.config.SHUTDOWN_GRACE_MS): Promise<void> {
    // The grace counts from here: the whole stop ends within it plus two short waits below
    // (CLOSE_WAIT_MS), inside main.ts' hard limit of grace + SHUTDOWN_MARGIN_MS.
    const started = Date.now();
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    const sweeping = this.timerSweeper?.stop();
    this.schedules?.stopTimers();
    // Gone from GET /v1/agents at once: new runs show that they wait for a worker. Bounded: with
    // Redis away this would wait for it (the heartbeat expires on its own anyway).
    const agents = this.registry.list().map((a) => a.name);
    const leaving = this.liveness
      ?.leave(this.id, agents, this.runtime.queues.versions.served())
      .then(async () => {
        // The last live worker of this agent set frees its task queue (see TaskQueuePool).
        const live = await this.liveness?.workers(agents);
        if (live && [...live.values()].every((workers) => workers.length === 0))
          await this.pool?.release();
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'could not withdraw the advert'));
    await Promise.race([
      leaving,
      new Promise<void>((resolve) => setTimeout(resolve, 1_000).unref()),
    ]);
    const workers = this.bullWorkers;
    const finishing = Promise.all([...workers.map((w) => w.close()), sweeping]);
    if (await outlasts(finishing, Math.max(0, graceMs - (Date.now() - started)))) {
      this.logger.warn({ graceMs }, 'grace period over; aborting in-flight work');
      this.aborts.abortAll('worker shutting down');
      // A forced close can wait forever on a blocking connection that Redis dropped (seen right
      // after a Redis restart, and for good when Redis is gone): a stop must end, so after a
      // short fixed wait the connections are cut. Nothing is lost: unfinished jobs are
      // redelivered once their locks expire.
      const forced = Promise.all(workers.map((w) => w.close(true)));
      if (await outlasts(forced, CLOSE_WAIT_MS)) {
        // Not awaited: disconnecting can hang the same way; the process is leaving anyway.
        this.logger.warn('queue connections did not close; disconnecting them');
        for (const w of workers) void w.disconnect().catch(() => undefined);
      }
    }
    // A quit waits for Redis' reply: with Redis gone it would wait for ever (issue 32: workers
    // stayed alive an hour after SIGTERM), so past a short wait the connections are dropped.
    const closing = Promise.all([
      this.controlSubscriber?.quit().catch(() => undefined),
      this.runtime.close(),
    ]);
    if (await outlasts(closing, CLOSE_WAIT_MS)) {
      this.logger.warn('Redis connections did not close; disconnecting them');
      this.controlSubscriber?.disconnect();
      this.runtime.disconnect();
    }
    this.logger.info('worker stopped');
  }
}
