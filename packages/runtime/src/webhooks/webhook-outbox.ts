import { BatonError } from '@baton/core';
import {
  WEBHOOK_EVENT_TYPES,
  type CreatedRunWebhook,
  type EventBody,
  type RunWebhookRequest,
  type RunWebhooksResponse,
  type WebhookEndpointName,
  type WebhookEventType,
} from '@baton/protocol';
import type { Logger } from 'pino';
import type { BatonQueues } from '../queues.ts';
import type { BatonKeys } from '../redis/keys.ts';
import type { RedisRunStore } from '../run-record/redis-run-store.ts';
import type { RedisClient } from '../redis/scripts.ts';
import { withSingletonLock } from '../redis/singleton-lock.ts';
import { generateWebhookSecret, webhookIdFor, webhookSecretKey } from './signing.ts';
import type { WebhookTargetPolicy } from './target-policy.ts';
import { mayProduceMessages, messagesFor, type WebhookMessageDraft } from './webhook-messages.ts';
import {
  WebhookStore,
  foldDeliveries,
  type RunWebhookConfig,
  type WebhookEndpoint,
} from '../run-record/webhook-store.ts';

/** The BullMQ queue of webhook deliveries (every worker process may take them). */
export const WEBHOOK_QUEUE = 'webhooks';
/** The custom backoff type of delivery jobs (the worker's backoffStrategy computes it). */
const WEBHOOK_BACKOFF_TYPE = 'webhook';

/** One delivery: a message to one endpoint. No secret and no URL: both are read at delivery. */
export interface WebhookJob {
  readonly v: 1;
  readonly kind: 'webhook';
  readonly runId: string;
  readonly tenantId: string;
  readonly endpoint: WebhookEndpointName;
  readonly webhookId: string;
  readonly type: WebhookEventType;
  readonly seq: number;
  /** The exact body every attempt sends (the signature covers it). */
  readonly body: string;
}

/** A tenant's webhook from the API's configuration (TENANT_WEBHOOKS). */
export interface TenantWebhook {
  readonly url: string;
  readonly secret: string;
  readonly events?: readonly WebhookEventType[];
}

/** BullMQ job ids may not contain ':'; the webhook id is URL-safe base64 already. */
function webhookJobId(webhookId: string, endpoint: WebhookEndpointName): string {
  return `wh.${webhookId}.${endpoint}`;
}

export interface WebhookOutboxDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly queues: BatonQueues;
  readonly policy: WebhookTargetPolicy;
  readonly logger: Logger;
  readonly now: () => number;
  /** EVENT_RETENTION_SECONDS: the webhook keys of a finished run live as long as the run. */
  readonly retentionSeconds: number;
  /** WEBHOOK_ATTEMPTS: each delivery job's attempts. */
  readonly attempts: number;
  /** WEBHOOK_SWEEP_INTERVAL_MS: how long until the sweeper looks at an unfinished run again. */
  readonly sweepEveryMs: number;
}

/** A registered configuration whose run never appeared (its creation failed) is dropped after this. */
const ORPHAN_AFTER_MS = 10 * 60_000;

/**
 * The webhook outbox. Messages are derived from the run's committed event log, never written
 * beside it, so no commit script changes and no crash can lose one:
 *
 * - A run with webhooks has a configuration (`:webhook`, with a cursor: the last event seq
 *   examined) and an entry in the sweeper's index, both written before the run exists.
 * - After a commit whose events may produce a message, the committer's hook pumps the run: read
 *   the events after the cursor, enqueue one delivery job per message and endpoint under a
 *   deterministic job id, then move the cursor forward. A crash anywhere in between leaves the
 *   cursor behind, and the next pump (the sweeper's, every WEBHOOK_SWEEP_INTERVAL_MS, in any
 *   worker) enqueues the same jobs again, which BullMQ ignores while they exist.
 * - A finished run whose events were all examined leaves the index; its webhook keys expire
 *   with it.
 */
export class WebhookOutbox {
  readonly webhooks: WebhookStore;
  readonly policy: WebhookTargetPolicy;
  /** Tenant-level endpoints; the API fills this from its configuration. */
  tenantWebhooks: ReadonlyMap<string, TenantWebhook> = new Map();
  /** Test hook (worker probes): called before the commit hook pumps. */
  probe?: (point: string, info: Record<string, unknown>) => void | Promise<void>;
  private readonly deps: WebhookOutboxDeps;

  constructor(deps: WebhookOutboxDeps) {
    this.deps = deps;
    this.policy = deps.policy;
    this.webhooks = new WebhookStore(deps.redis, deps.keys);
  }

  /**
   * The endpoints of a new run: its own (the target checked, a secret generated when none was
   * given) and its tenant's. Both fire: the run's webhook serves the caller that started it, the
   * tenant's serves the operator's integrations, and neither should silence the other. Throws
   * (4xx) before anything is written.
   */
  async endpointsFor(
    tenantId: string,
    request: RunWebhookRequest | undefined,
  ): Promise<{ endpoints: WebhookEndpoint[]; created?: CreatedRunWebhook }> {
    const endpoints: WebhookEndpoint[] = [];
    let created: CreatedRunWebhook | undefined;
    if (request) {
      if (request.secret !== undefined) {
        try {
          webhookSecretKey(request.secret);
        } catch (error) {
          throw new BatonError('validation_failed', `webhook.secret: ${(error as Error).message}`);
        }
      }
      await this.policy.check(request.url);
      const secret = request.secret ?? generateWebhookSecret();
      const events = [...(request.events ?? WEBHOOK_EVENT_TYPES)];
      endpoints.push({ name: 'run', url: request.url, events, secret });
      created = { url: request.url, events, ...(request.secret ? {} : { secret }) };
    }
    const tenant = this.tenantWebhooks.get(tenantId);
    if (tenant)
      endpoints.push({
        name: 'tenant',
        url: tenant.url,
        events: [...(tenant.events ?? WEBHOOK_EVENT_TYPES)],
        secret: tenant.secret,
      });
    return created ? { endpoints, created } : { endpoints };
  }

  /**
   * The run's own webhook as its create answered it (the secret when it was generated), for a
   * create answered again (a resend after its first attempt created the run, whose answer the
   * client never got).
   */
  async createdWebhook(
    runId: string,
    request: RunWebhookRequest | undefined,
  ): Promise<CreatedRunWebhook | undefined> {
    if (!request) return undefined;
    const own = (await this.webhooks.load(runId))?.endpoints.find((e) => e.name === 'run');
    if (!own) return undefined;
    return {
      url: own.url,
      events: [...own.events],
      ...(request.secret ? {} : { secret: own.secret }),
    };
  }

  /** Stores the endpoints of a run about to be created (nothing when it has none). */
  async register(
    runId: string,
    tenantId: string,
    endpoints: readonly WebhookEndpoint[],
    metadata: Readonly<Record<string, string>>,
  ): Promise<void> {
    if (endpoints.length === 0) return;
    const now = this.deps.now();
    await this.webhooks.register(
      runId,
      { tenantId, endpoints, metadata, createdAt: now },
      now + this.deps.sweepEveryMs,
    );
  }

  /**
   * The committer's hook, after every commit: cheap unless the events may produce a message.
   * Never throws: a failure here leaves the cursor behind for the sweeper.
   */
  readonly afterCommit = async (
    runId: string,
    events: readonly EventBody[],
    known?: { readonly webhook: boolean },
  ): Promise<void> => {
    // A run without a configuration has none later (it is stored before the run exists).
    if (known?.webhook === false || !mayProduceMessages(events)) return;
    try {
      await this.probe?.('before-webhook-outbox', { runId });
      await this.pump(runId);
    } catch (err) {
      this.deps.logger.warn({ err, runId }, 'webhook outbox: pump failed; the sweeper retries');
    }
  };

  /**
   * Enqueues the messages of the run's events after its cursor; idempotent. `swept`: called by
   * the sweeper for an index entry (one without configuration is dropped).
   */
  async pump(runId: string, swept = false): Promise<number> {
    const { store } = this.deps;
    const config = await this.webhooks.load(runId);
    if (!config) {
      if (swept) await this.webhooks.unindex(runId);
      return 0;
    }
    const meta = await store.meta(runId);
    if (!meta) {
      if (this.deps.now() - config.createdAt > ORPHAN_AFTER_MS) await this.webhooks.forget(runId);
      return 0;
    }
    let enqueued = 0;
    const fresh = await store.readEvents(runId, config.cursor);
    if (fresh.length > 0) {
      const all = config.cursor === 0 ? fresh : await store.readEvents(runId);
      const drafts = messagesFor(all, config.cursor, {
        tenantId: config.tenantId,
        metadata: config.metadata,
      });
      for (const draft of drafts) enqueued += await this.enqueue(runId, config, draft);
      await this.webhooks.advanceCursor(runId, fresh[fresh.length - 1]!.seq);
    }
    // A done run gets no more events: every message it will ever have is enqueued.
    if (meta.status === 'done')
      await this.webhooks.expireWithRun(runId, this.deps.retentionSeconds * 1000);
    else await this.webhooks.schedule(runId, this.deps.now() + this.deps.sweepEveryMs);
    return enqueued;
  }

  /**
   * Enqueues one message to every endpoint of the run that subscribed to its type. The job id
   * is a function of the message and endpoint, so enqueueing twice delivers once (while the
   * job is kept, JOB_RETENTION_SECONDS); the webhook id lets receivers drop any duplicate.
   */
  async enqueue(
    runId: string,
    config: RunWebhookConfig,
    draft: WebhookMessageDraft,
  ): Promise<number> {
    const webhookId = webhookIdFor(runId, draft.seq, draft.type);
    const body = JSON.stringify(draft.message);
    const queue = this.deps.queues.queue(WEBHOOK_QUEUE);
    const age = this.deps.queues.jobRetentionSeconds;
    let count = 0;
    for (const endpoint of config.endpoints) {
      if (!endpoint.events.includes(draft.type)) continue;
      const job: WebhookJob = {
        v: 1,
        kind: 'webhook',
        runId,
        tenantId: config.tenantId,
        endpoint: endpoint.name,
        webhookId,
        type: draft.type,
        seq: draft.seq,
        body,
      };
      await queue.add(draft.type, job, {
        jobId: webhookJobId(webhookId, endpoint.name),
        attempts: this.deps.attempts,
        backoff: { type: WEBHOOK_BACKOFF_TYPE },
        removeOnComplete: { age, count: 50_000 },
        removeOnFail: { age, count: 50_000 },
      });
      await this.webhooks.append(runId, {
        k: 'enqueued',
        webhookId,
        endpoint: endpoint.name,
        type: draft.type,
        seq: draft.seq,
        at: this.deps.now(),
      });
      count += 1;
    }
    return count;
  }

  /**
   * Pumps the runs due in the sweeper's index (one sweeper at a time across workers): what a
   * crash between a commit and its pump left behind is enqueued here.
   */
  async sweep(batch = 200, lockMs = 30_000): Promise<number> {
    const { redis, keys } = this.deps;
    const run = await withSingletonLock(
      redis,
      { key: keys.webhookSweepLock, ttlMs: lockMs },
      async () => {
        let count = 0;
        for (const runId of await this.webhooks.due(this.deps.now(), batch)) {
          try {
            count += await this.pump(runId, true);
          } catch (err) {
            this.deps.logger.warn({ err, runId }, 'webhook sweep: pump failed');
            await this.webhooks.schedule(runId, this.deps.now() + this.deps.sweepEveryMs);
          }
        }
        return count;
      },
    );
    if (!run.acquired) return 0;
    const enqueued = run.value;
    if (enqueued > 0) this.deps.logger.info({ enqueued }, 'webhook sweep enqueued deliveries');
    return enqueued;
  }

  /** What GET /v1/runs/:id/webhooks shows (never a secret). */
  async view(runId: string): Promise<RunWebhooksResponse> {
    const config = await this.webhooks.load(runId);
    const records = await this.webhooks.readLog(runId);
    return {
      runId,
      endpoints: (config?.endpoints ?? []).map((e) => ({
        endpoint: e.name,
        url: e.url,
        events: [...e.events],
      })),
      deliveries: foldDeliveries(records),
    };
  }

  async forget(runId: string): Promise<void> {
    await this.webhooks.forget(runId);
  }
}
