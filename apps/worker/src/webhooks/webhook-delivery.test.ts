import { DelayedError, type Job } from 'bullmq';
import type { WebhookJob, WebhookOutbox } from '@baton/runtime/internal';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { WebhookAttemptError } from './webhook-attempt-error.ts';
import { DeliveryGate, deliveryTarget } from './delivery-gate.ts';
import { WebhookDeliveryProcessor } from './webhook-delivery.ts';

const URL_ = 'http://203.0.113.9:8080/hook';

function setup(gate: DeliveryGate) {
  const append = vi.fn(async () => undefined);
  const outbox = {
    webhooks: {
      load: async () => ({ endpoints: [{ name: 'run', url: URL_, events: [], secret: 'x' }] }),
      append,
    },
    policy: {},
  } as unknown as WebhookOutbox;
  const processor = new WebhookDeliveryProcessor({
    outbox,
    logger: pino({ level: 'silent' }),
    now: () => 50_000,
    backoff: { baseMs: 1_000, maxMs: 60_000 },
    timeoutMs: 10_000,
    gate,
    random: () => 0.5,
  });
  const moveToDelayed = vi.fn(async () => undefined);
  const job = {
    data: {
      v: 1,
      kind: 'webhook',
      runId: 'r1',
      tenantId: 'a',
      endpoint: 'run',
      webhookId: 'msg_1',
      type: 'run.finished',
      seq: 3,
      body: '{}',
    } satisfies WebhookJob,
    attemptsMade: 0,
    opts: { attempts: 12 },
    moveToDelayed,
  } as unknown as Job<WebhookJob>;
  return { processor, job, append, moveToDelayed };
}

const LIMITS = { perTenant: 4, perTarget: 1, breakerFailures: 1, breakerCooldownMs: 60_000 };

describe('WebhookDeliveryProcessor and its gate', () => {
  it('a delivery over its target’s limit goes back to the queue: no attempt spent, nothing logged, nothing sent', async () => {
    const gate = new DeliveryGate(LIMITS, 10_000, () => 0.5);
    const held = gate.enter('a', deliveryTarget('a', URL_), 45_000);
    expect(held.kind).toBe('go');
    const { processor, job, append, moveToDelayed } = setup(gate);
    await expect(processor.process(job, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(moveToDelayed).toHaveBeenCalledWith(55_000, 'token');
    expect(append).not.toHaveBeenCalled();
  });

  it('a target whose breaker is open: the attempt fails at once, logged and retried on its backoff', async () => {
    const gate = new DeliveryGate(LIMITS, 10_000, () => 0.5);
    const first = gate.enter('a', deliveryTarget('a', URL_), 0);
    if (first.kind !== 'go') throw new Error('expected go');
    first.done(false, 10_000);
    const { processor, job, append, moveToDelayed } = setup(gate);
    const error = await processor.process(job, 'token').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebhookAttemptError);
    expect(moveToDelayed).not.toHaveBeenCalled();
    expect(append).toHaveBeenCalledWith(
      'r1',
      expect.objectContaining({
        k: 'attempt',
        attempt: 1,
        outcome: 'retry',
        durationMs: 0,
        error: expect.stringMatching(/^circuit open: 1 attempts in a row/) as unknown,
      }),
    );
  });
});
