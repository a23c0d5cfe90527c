import { Worker } from 'bullmq';
import { bullPrefix, type BatonRuntime } from '@baton/runtime';
import { WEBHOOK_QUEUE, workerBackend, type WebhookJob } from '@baton/runtime/internal';
import type { Logger } from 'pino';
import type { WorkerConfig } from '../config.ts';
import { DeliveryGate } from './delivery-gate.ts';
import { WebhookDeliveryProcessor } from './webhook-delivery.ts';

export interface WebhookDelivery {
  /** The BullMQ worker of the webhook queue (closed with the process's other workers). */
  readonly worker: Worker<WebhookJob>;
  /** The sweeper's timer (cleared with the process's other timers). */
  readonly sweeper: NodeJS.Timeout;
}

/**
 * Delivers webhooks from this worker process and sweeps for deliveries a crash kept from being
 * enqueued; null when WEBHOOK_CONCURRENCY is 0 (another process delivers them).
 */
export function startWebhookDelivery(
  rt: BatonRuntime,
  config: WorkerConfig,
  logger: Logger,
): WebhookDelivery | null {
  if (config.WEBHOOK_CONCURRENCY === 0) return null;
  const processor = new WebhookDeliveryProcessor({
    outbox: rt.webhooks,
    logger,
    now: () => rt.clock.now(),
    backoff: { baseMs: config.WEBHOOK_BACKOFF_MS, maxMs: config.WEBHOOK_BACKOFF_MAX_MS },
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    gate: new DeliveryGate(
      {
        perTenant: config.WEBHOOK_TENANT_CONCURRENCY,
        perTarget: config.WEBHOOK_TARGET_CONCURRENCY,
        breakerFailures: config.WEBHOOK_BREAKER_FAILURES,
        breakerCooldownMs: config.WEBHOOK_BREAKER_COOLDOWN_MS,
      },
      config.WEBHOOK_TIMEOUT_MS,
    ),
  });
  const worker = new Worker<WebhookJob>(
    WEBHOOK_QUEUE,
    (job, token) => processor.process(job, token),
    {
      connection: rt.connection,
      prefix: bullPrefix(config.BATON_PREFIX),
      concurrency: config.WEBHOOK_CONCURRENCY,
      // Woken by the queue's marker when a delivery is added or due: this only sets idle polling.
      drainDelay: 30,
      // An attempt may take WEBHOOK_TIMEOUT_MS; the lock must not lapse meanwhile.
      lockDuration: Math.max(config.JOB_LOCK_MS, config.WEBHOOK_TIMEOUT_MS * 2),
      stalledInterval: config.STALLED_INTERVAL_MS,
      maxStalledCount: config.MAX_STALLS,
      settings: { backoffStrategy: processor.backoffStrategy },
    },
    workerBackend,
  );
  worker.on('error', (err) => {
    if (!rt.outage.connectionError(err, WEBHOOK_QUEUE))
      logger.error({ err, queue: WEBHOOK_QUEUE }, 'worker error');
  });
  const sweeper = setInterval(() => {
    rt.webhooks
      .sweep(config.RECONCILE_BATCH, Math.max(config.WEBHOOK_SWEEP_INTERVAL_MS * 3, 5_000))
      .catch((err: unknown) => logger.warn({ err }, 'webhook sweep failed'));
  }, config.WEBHOOK_SWEEP_INTERVAL_MS);
  return { worker, sweeper };
}
