import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { parseRetryAfter } from '@baton/protocol';
import {
  webhookHeaders,
  webhookRetryDelay,
  type AttemptOutcome,
  type WebhookBackoffOptions,
  type WebhookJob,
  type WebhookOutbox,
} from '@baton/runtime/internal';
import type { Logger } from 'pino';
import { deliveryTarget, type DeliveryGate } from './delivery-gate.ts';
import { postWebhook, type PostOutcome } from './webhook-http.ts';
import { WebhookAttemptError } from './webhook-attempt-error.ts';

export interface WebhookDeliveryDeps {
  readonly outbox: WebhookOutbox;
  readonly logger: Logger;
  readonly now: () => number;
  readonly backoff: WebhookBackoffOptions;
  readonly timeoutMs: number;
  /** This process's per-tenant and per-target limits and breakers (delivery-gate.ts). */
  readonly gate: DeliveryGate;
  readonly random?: () => number;
}

function describe(outcome: PostOutcome): string {
  if (outcome.refused !== undefined) return outcome.refused;
  if (outcome.error !== undefined) return outcome.error;
  const code = outcome.statusCode ?? 0;
  return code >= 300 && code < 400 ? `HTTP ${code} (redirects are not followed)` : `HTTP ${code}`;
}

/**
 * One delivery attempt per job run: sign (a fresh timestamp, the stable webhook id), POST, log
 * the attempt in the run's delivery log, and tell BullMQ what comes next. 2xx: delivered. 410:
 * the receiver is gone for good, stop. A refused target: stop. Anything else (other statuses,
 * timeouts, connection errors) is retried with backoff until the job's attempts are used up.
 * The gate comes first: a delivery over its tenant's or target's limit goes back to the queue
 * (no attempt spent), and one to a target whose breaker is open fails at once.
 */
export class WebhookDeliveryProcessor {
  private readonly deps: WebhookDeliveryDeps;

  constructor(deps: WebhookDeliveryDeps) {
    this.deps = deps;
  }

  /** BullMQ's backoffStrategy for WEBHOOK_BACKOFF_TYPE: the delay the failed attempt logged. */
  readonly backoffStrategy = (attemptsMade: number, _type?: string, err?: Error): number =>
    WebhookAttemptError.isInstance(err)
      ? err.delayMs
      : webhookRetryDelay(attemptsMade, this.deps.backoff, this.deps.random);

  async process(job: Job<WebhookJob>, token?: string): Promise<AttemptOutcome | 'expired'> {
    const data = job.data;
    if (data?.kind !== 'webhook' || data.v !== 1)
      throw new UnrecoverableError('not a webhook delivery job of this version');
    const { outbox, now } = this.deps;
    const config = await outbox.webhooks.load(data.runId);
    const endpoint = config?.endpoints.find((e) => e.name === data.endpoint);
    // The run and its webhook keys expired (retention) or were deleted: nobody to tell.
    if (!endpoint) return 'expired';
    const attempt = job.attemptsMade + 1;
    const maxAttempts = job.opts.attempts ?? 1;
    const startedAt = now();
    const gate = this.deps.gate.enter(
      data.tenantId,
      deliveryTarget(data.tenantId, endpoint.url),
      startedAt,
    );
    if (gate.kind === 'defer') {
      await job.moveToDelayed(startedAt + gate.delayMs, token);
      throw new DelayedError();
    }
    let posted: PostOutcome;
    if (gate.kind === 'open')
      posted = {
        error:
          `circuit open: ${String(gate.failures)} attempts in a row to this endpoint's host got ` +
          `no answer; not called until ${new Date(gate.untilMs).toISOString()}`,
      };
    else {
      let answered = false;
      try {
        const headers = webhookHeaders(
          endpoint.secret,
          data.webhookId,
          Math.floor(startedAt / 1000),
          data.body,
        );
        posted = await postWebhook(endpoint.url, headers, data.body, {
          timeoutMs: this.deps.timeoutMs,
          policy: outbox.policy,
        });
        answered = posted.statusCode !== undefined || posted.refused !== undefined;
      } finally {
        gate.done(answered, now());
      }
    }
    const finishedAt = now();
    const code = posted.statusCode;
    let outcome: AttemptOutcome;
    if (posted.refused !== undefined) outcome = 'refused';
    else if (code !== undefined && code >= 200 && code < 300) outcome = 'delivered';
    else if (code === 410) outcome = 'stopped';
    else outcome = attempt >= maxAttempts ? 'failed' : 'retry';
    const delayMs =
      outcome === 'retry'
        ? webhookRetryDelay(
            attempt,
            this.deps.backoff,
            this.deps.random,
            parseRetryAfter(posted.retryAfter, finishedAt),
          )
        : undefined;
    const error = outcome === 'delivered' || code !== undefined ? undefined : describe(posted);
    await outbox.webhooks.append(data.runId, {
      k: 'attempt',
      webhookId: data.webhookId,
      endpoint: data.endpoint,
      type: data.type,
      seq: data.seq,
      at: startedAt,
      attempt,
      durationMs: finishedAt - startedAt,
      ...(code === undefined ? {} : { statusCode: code }),
      ...(error === undefined ? {} : { error }),
      outcome,
      ...(delayMs === undefined ? {} : { nextRetryAt: finishedAt + delayMs }),
    });
    const log = this.deps.logger.child({
      runId: data.runId,
      webhookId: data.webhookId,
      endpoint: data.endpoint,
      attempt,
    });
    if (outcome === 'retry') throw new WebhookAttemptError(describe(posted), delayMs ?? 0);
    if (outcome === 'failed') {
      log.warn({ reason: describe(posted) }, 'webhook delivery failed after its last attempt');
      throw new UnrecoverableError(`webhook not delivered: ${describe(posted)}`);
    }
    if (outcome !== 'delivered') log.warn({ outcome, reason: describe(posted) }, 'webhook stopped');
    return outcome;
  }
}
