import { Cluster } from 'ioredis';
import type { Clock } from '@baton/core';
import type { Logger } from 'pino';
import { toPino, type BatonLogger } from './logger.ts';
import { duplicateClient } from './redis/connection.ts';
import { createRedisClient } from './redis/redis-client.ts';
import { RedisOutageLog } from './redis/outage-log.ts';
import { coalesceWrites } from './internals/ioredis/write-coalescing.ts';
import { Durability } from './redis/durability.ts';
import { checkTopology } from './redis/topology.ts';
import { BatonKeys } from './redis/keys.ts';
import { RedisRunStore } from './run-record/redis-run-store.ts';
import { RedisThreadStore } from './redis/thread-store.ts';
import { BatonQueues } from './queues.ts';
import { TimerIndex } from './timers/timer-index.ts';
import { RunCommitter } from './run-committer.ts';
import { RunWaits } from './waits/run-waits.ts';
import { ChildRuns } from './child-runs.ts';
import { RunService } from './run-service.ts';
import { finishedDuties } from './finished-duties.ts';
import { RunEventSubscriber, type RunEventSubscriberOptions } from './redis/event-subscriber.ts';
import { FairnessPolicy, parseFairness } from './fairness/fairness-config.ts';
import { treeWaitsOnHuman } from './fairness/tree-waits.ts';
import { RunAdmission } from './fairness/run-admission.ts';
import { withRuntimeDefaults, type RuntimeConfig } from './config/runtime-config.ts';
import { systemClock } from './system-clock.ts';
import type { RedisClient } from './redis/scripts.ts';
import { WebhookTargetPolicy, parseAllowedHosts } from './webhooks/target-policy.ts';
import { WebhookOutbox } from './webhooks/webhook-outbox.ts';
import type { RunArchive } from '@baton/core';
import { Archiver } from './archive/archiver.ts';
import { PgArchive } from './archive/pg-archive.ts';

/**
 * A RuntimeConfig built in code: every setting left out (or undefined) takes the schema's
 * default (config/runtime-config.ts), as SDK users' configurations predate later settings.
 */
export type RuntimeOptions = Partial<RuntimeConfig>;

/** What a BatonRuntime is built from. */
export interface BatonRuntimeOptions {
  readonly config: RuntimeOptions;
  /** Any logger with pino's methods (pino itself fits); other loggers get pino's redaction too. */
  readonly logger: BatonLogger;
  /** Default: the system clock. */
  readonly clock?: Clock | undefined;
  /**
   * The connection behaviour: 'api' fails fast during a Redis outage (503), a 'worker' waits it
   * out; both reconnect within about a second of Redis returning. Default: 'worker'.
   */
  readonly role?: 'api' | 'worker' | undefined;
  /**
   * The caller's own ioredis client or Cluster (config.REDIS_URL is then ignored). The runtime
   * uses it as is and never closes it; BullMQ gets a duplicate because its blocking connections
   * need `maxRetriesPerRequest: null`, which the caller's client may not have.
   */
  readonly redis?: RedisClient | undefined;
}

/** Connections and stores shared by a worker process and the API (no job processing). */
export class BatonRuntime {
  readonly redis: RedisClient;
  readonly durability: Durability;
  readonly config: RuntimeConfig;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly queues: BatonQueues;
  readonly committer: RunCommitter;
  /** The shared timer index (deadlines, durable sleeps; timers/timer-index.ts). */
  readonly timers: TimerIndex;
  readonly service: RunService;
  /** Waitpoints, event waits and their timeouts (waits/run-waits.ts). */
  readonly waits: RunWaits;
  /** Fairness admission: priorities, fairness keys, tenants' run limits (docs/fairness.md). */
  readonly admission: RunAdmission;
  /** Agent-as-tool: child run creation, result delivery, cancel cascade. */
  readonly children: ChildRuns;
  /** Webhooks: registration, the outbox pumped after commits, the sweeper, the delivery log. */
  readonly webhooks: WebhookOutbox;
  /** ARCHIVE_URL's archive of finished runs (null without it: Redis is the only store). */
  readonly archive: RunArchive | null;
  /** Copies finished runs into the archive (null without one); workers pump it. */
  readonly archiver: Archiver | null;
  /**
   * The one connection every BullMQ Queue and the FlowProducer share (a BullMQ Worker duplicates
   * it for its own connections); it used to be options, which opened a connection per queue.
   */
  readonly connection: RedisClient;
  readonly clock: Clock;
  /**
   * Where every Redis connection of the process reports its errors: an outage is one line, a
   * reminder now and then, and one line when Redis is back (BullMQ workers report here too).
   */
  readonly outage: RedisOutageLog;
  private readonly ownsClient: boolean;
  private subscriber: RunEventSubscriber | undefined;

  constructor(opts: BatonRuntimeOptions) {
    const { config: options, clock = systemClock, role = 'worker', redis: client } = opts;
    const logger: Logger = toPino(opts.logger);
    const config: RuntimeConfig = withRuntimeDefaults(options);
    this.clock = clock;
    this.config = config;
    this.ownsClient = client === undefined;
    this.redis = client ?? createRedisClient(config, { role, connectionName: 'baton' });
    coalesceWrites(this.redis);
    const redis = this.redis;
    this.outage = new RedisOutageLog({
      url: config.REDIS_URL,
      logger,
      isUp: () => redis.status === 'ready',
      remindEveryMs: config.REDIS_RETRY_REMINDER_MS,
    });
    const outage = this.outage;
    this.redis.on('error', (err) => {
      if (!outage.connectionError(err, 'main')) logger.error({ err }, 'redis error');
    });
    this.redis.on('ready', () => outage.connected());
    // BullMQ's connection has the role's reconnect policy (BullMQ's own backs off to 20 s).
    this.connection = client
      ? duplicateClient(client, { connectionName: 'baton-bull', maxRetriesPerRequest: null })
      : createRedisClient(config, { role, connectionName: 'baton-bull', bullmq: true });
    this.connection.on('error', (err) => {
      if (!outage.connectionError(err, 'bull')) logger.error({ err }, 'redis error (queues)');
    });
    this.durability = new Durability(this.redis, config.BATON_DURABILITY, logger);
    this.keys = new BatonKeys(config.BATON_PREFIX);
    const now = (): number => clock.now();
    // With an archive a finished run's keys are held until it is archived (the archiver then
    // gives them EVENT_RETENTION_SECONDS); without one they expire after the retention.
    const finishedTtl = config.ARCHIVE_URL
      ? Math.max(config.ARCHIVE_HOLD_SECONDS, config.EVENT_RETENTION_SECONDS)
      : config.EVENT_RETENTION_SECONDS;
    this.store = new RedisRunStore({
      redis: this.redis,
      prefix: config.BATON_PREFIX,
      now,
      retentionSeconds: finishedTtl,
    });
    this.threads = new RedisThreadStore({
      redis: this.redis,
      prefix: config.BATON_PREFIX,
      now,
      ttlSeconds: config.THREAD_TTL_SECONDS,
      limits: {
        maxMessages: config.THREAD_MAX_MESSAGES,
        maxBytes: config.THREAD_MAX_BYTES,
        windowMessages: config.THREAD_HISTORY_MAX_MESSAGES,
        windowBytes: config.THREAD_HISTORY_MAX_BYTES,
      },
    });
    this.queues = new BatonQueues({
      connection: this.connection,
      prefix: config.BATON_PREFIX,
      redis: this.redis,
      keys: this.keys,
      shards: config.BATON_QUEUE_SHARDS,
      toolAttempts: config.TOOL_ATTEMPTS,
      jobRetentionSeconds: config.JOB_RETENTION_SECONDS,
      onError: (err, queue) => {
        if (!outage.connectionError(err, queue)) logger.error({ err, queue }, 'queue error');
      },
    });
    this.queues.flows.on('error', (err) => {
      if (!outage.connectionError(err, 'flows')) logger.error({ err }, 'flow producer error');
    });
    this.webhooks = new WebhookOutbox({
      redis: this.redis,
      keys: this.keys,
      store: this.store,
      queues: this.queues,
      policy: new WebhookTargetPolicy({
        allowPrivate: config.BATON_WEBHOOK_ALLOW_PRIVATE,
        allowedHosts: parseAllowedHosts(config.BATON_WEBHOOK_ALLOWED_HOSTS),
      }),
      logger,
      now,
      retentionSeconds: config.EVENT_RETENTION_SECONDS,
      attempts: config.WEBHOOK_ATTEMPTS,
      sweepEveryMs: config.WEBHOOK_SWEEP_INTERVAL_MS,
    });
    this.admission = new RunAdmission({
      redis: this.redis,
      keys: this.keys,
      queues: this.queues,
      policy: new FairnessPolicy(parseFairness(config.BATON_FAIRNESS)),
      meta: (runId) => this.store.meta(runId),
      treeWaits: (tenantId, runId) => treeWaitsOnHuman(this.store, tenantId, runId),
      now,
      logger,
    });
    this.archive = config.ARCHIVE_URL ? new PgArchive({ url: config.ARCHIVE_URL, logger }) : null;
    this.archiver = this.archive
      ? new Archiver({
          redis: this.redis,
          keys: this.keys,
          store: this.store,
          threads: this.threads,
          archive: this.archive,
          logger,
          now,
          retentionSeconds: config.EVENT_RETENTION_SECONDS,
          batch: config.ARCHIVE_BATCH,
        })
      : null;
    this.children = new ChildRuns({
      redis: this.redis,
      keys: this.keys,
      store: this.store,
      threads: this.threads,
      queues: this.queues,
      committer: () => this.committer,
      clock,
      logger,
      resultTtlSeconds: config.EVENT_RETENTION_SECONDS,
      archive: () => this.archive,
    });
    this.timers = new TimerIndex(this.redis, this.keys, config.BATON_QUEUE_SHARDS);
    this.committer = new RunCommitter({
      timers: this.timers,
      admission: this.admission,
      store: this.store,
      threads: this.threads,
      queues: this.queues,
      redis: this.redis,
      keys: this.keys,
      now,
      logger,
      retentionSeconds: finishedTtl,
      afterCommitHook: this.webhooks.afterCommit,
      onWaiting: (cp) => this.waits.registerWaiting(cp),
      onFinished: finishedDuties({ children: this.children, archiver: this.archiver }),
    });
    this.service = new RunService({
      redis: this.redis,
      keys: this.keys,
      store: this.store,
      threads: this.threads,
      queues: this.queues,
      committer: this.committer,
      admission: this.admission,
      durability: this.durability,
      clock,
      webhooks: this.webhooks,
      ...(this.archive ? { archive: this.archive } : {}),
      subscriber: () => this.eventSubscriber(),
    });
    this.waits = new RunWaits({
      redis: this.redis,
      keys: this.keys,
      now,
      logger,
      decide: (tenantId, runId, inputs) => this.service.submitDecisions(tenantId, runId, inputs),
      load: (tenantId, runId) => this.service.load(tenantId, runId),
      tenantOf: async (runId) => (await this.store.meta(runId))?.tenantId ?? null,
    });
  }

  /**
   * The subscriber every event stream of this process shares (RunService.openEvents): created
   * on first use, on a dedicated connection, so a worker that streams nothing opens none. The
   * first caller's options are its options (the API passes its logger and metrics tap).
   */
  eventSubscriber(
    opts: Pick<RunEventSubscriberOptions, 'onError' | 'onMessage'> = {},
  ): RunEventSubscriber {
    this.subscriber ??= new RunEventSubscriber({ redis: this.redis, source: this.store, ...opts });
    return this.subscriber;
  }

  /**
   * The start-up checks of the Redis this process uses: the kind REDIS_URL says is the kind it
   * is, and strict durability can be kept. Throws a one-line reason for the operator.
   */
  async checkRedis(): Promise<void> {
    await checkTopology(this.redis);
    await this.durability.check();
    // The archive's connection and schema (migrations) at start: a bad ARCHIVE_URL fails here.
    if (this.archive instanceof PgArchive) await this.archive.open();
  }

  /** Resolves true once the main connection is ready, false after `timeoutMs` without it. */
  async waitUntilReady(timeoutMs: number): Promise<boolean> {
    const ready = await this.untilReady(timeoutMs);
    // A Cluster connects to each node at its first command, and a fail-fast client (no offline
    // queue) refuses commands to a node still connecting: connect every master now, not under
    // the first burst of requests.
    if (ready && this.redis instanceof Cluster)
      await Promise.allSettled(this.redis.nodes('master').map((node) => node.ping()));
    return ready;
  }

  private async untilReady(timeoutMs: number): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    return new Promise<boolean>((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        resolve(ok);
      };
      const onReady = (): void => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.redis.on('ready', onReady);
    });
  }

  async close(): Promise<void> {
    await this.subscriber?.close().catch(() => undefined);
    await this.store.metrics.close();
    await this.archive?.close();
    this.outage.close();
    await this.queues.close();
    await this.connection.quit().catch(() => undefined);
    if (this.ownsClient) await this.redis.quit().catch(() => undefined);
  }

  /**
   * Drops the Redis connections without a goodbye: for a stop whose close() waits on a Redis
   * that is gone (a quit waits for its reply). Commands still queued fail.
   */
  disconnect(): void {
    this.outage.close();
    this.connection.disconnect();
    if (this.ownsClient) this.redis.disconnect();
  }
}
