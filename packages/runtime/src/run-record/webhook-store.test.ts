import { describe, expect, it } from 'vitest';
import { foldDeliveries, type WebhookLogRecord } from './webhook-store.ts';

const base = { webhookId: 'msg_a', type: 'run.finished', seq: 9 } as const;

describe('foldDeliveries', () => {
  it('one delivery per message and endpoint, attempts in order, status from the last attempt', () => {
    const records: WebhookLogRecord[] = [
      { ...base, k: 'enqueued', endpoint: 'run', at: 1 },
      { ...base, k: 'enqueued', endpoint: 'tenant', at: 1 },
      { ...base, k: 'enqueued', endpoint: 'run', at: 2 }, // a second pump: same delivery
      {
        ...base,
        k: 'attempt',
        endpoint: 'run',
        at: 3,
        attempt: 1,
        durationMs: 5,
        statusCode: 500,
        outcome: 'retry',
        nextRetryAt: 100,
      },
      {
        ...base,
        k: 'attempt',
        endpoint: 'run',
        at: 100,
        attempt: 2,
        durationMs: 50,
        error: 'timeout',
        outcome: 'retry',
        nextRetryAt: 300,
      },
      {
        ...base,
        k: 'attempt',
        endpoint: 'run',
        at: 300,
        attempt: 3,
        durationMs: 4,
        statusCode: 204,
        outcome: 'delivered',
      },
      {
        ...base,
        k: 'attempt',
        endpoint: 'tenant',
        at: 3,
        attempt: 1,
        durationMs: 4,
        statusCode: 410,
        outcome: 'stopped',
      },
    ];
    const [run, tenant, ...rest] = foldDeliveries(records);
    expect(rest).toEqual([]);
    expect(run).toMatchObject({ endpoint: 'run', status: 'delivered', seq: 9 });
    expect(run!.attempts).toEqual([
      { attempt: 1, at: 3, durationMs: 5, statusCode: 500, nextRetryAt: 100 },
      { attempt: 2, at: 100, durationMs: 50, error: 'timeout', nextRetryAt: 300 },
      { attempt: 3, at: 300, durationMs: 4, statusCode: 204 },
    ]);
    expect(tenant).toMatchObject({ endpoint: 'tenant', status: 'stopped' });
    expect(foldDeliveries([{ ...base, k: 'enqueued', endpoint: 'run', at: 1 }])[0]!.status).toBe(
      'pending',
    );
  });
});
