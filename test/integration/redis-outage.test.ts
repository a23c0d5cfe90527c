/**
 * Redis goes away for 20 s and comes back (same data: AOF with fsync always). During the outage
 * the API answers at once (readyz 503 within 500 ms, requests 503 `unavailable` with Retry-After)
 * instead of hanging; after it, readiness and runs recover within 2 s of Redis returning (the
 * reconnect backoff is capped near a second; BullMQ's default grows to 20 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '@baton/testing/api-harness';
import { startProcessStack, type ProcessStack } from '@baton/testing/process-stack';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import { startHarness, waitFor } from '@baton/testing/worker-harness';
import { createDemoAgents } from '@baton/core/testing';
import type { DecisionsResponse, ErrorBody, RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';

const OUTAGE_MS = 20_000;

let redis: RedisProcess;
let stack: ProcessStack;
let client: ApiClient;

beforeAll(async () => {
  redis = await startRedisProcess({ aof: 'always' });
  stack = await startProcessStack(redis.url);
  client = stack.client;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await stopAllWorkerProcesses();
  await redis?.stop();
});

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await fn();
  return { value, ms: Date.now() - started };
}

async function finishes(runId: string, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const r = await client.get<RunSnapshot>(`/v1/runs/${runId}`);
      return r.status === 200 && r.body.status === 'done' ? true : null;
    },
    timeoutMs,
    `run ${runId} to finish`,
  );
}

describe('a 20 s Redis outage', () => {
  it('fails fast while Redis is away and recovers within 2 s of its return', async () => {
    const before = await client.createRun('assistant', 'deploy please');
    await waitFor(
      async () =>
        (await client.get<RunSnapshot>(`/v1/runs/${before.runId}`)).body.status === 'waiting'
          ? true
          : null,
      20_000,
      'the run to wait for its approval',
    );
    expect((await client.get('/readyz')).status).toBe(200);

    await redis.kill('SIGKILL');
    const downAt = Date.now();
    // Let clients notice and back off for most of the outage.
    await new Promise((r) => setTimeout(r, 2_000));
    const ready = await timed(() => client.get('/readyz'));
    expect(ready.value.status).toBe(503);
    expect(ready.ms).toBeLessThan(500);
    expect(ready.value.headers.get('retry-after')).toBe('1');
    const create = await timed(() =>
      client.post<ErrorBody>('/v1/runs', {
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'hi' }] },
      }),
    );
    expect(create.value.status).toBe(503);
    expect(create.value.body.error.code).toBe('unavailable');
    expect(create.value.headers.get('retry-after')).toBe('1');
    expect(create.ms).toBeLessThan(2_500);
    const get = await timed(() => client.get(`/v1/runs/${before.runId}`));
    expect(get.value.status).toBe(503);
    expect(get.ms).toBeLessThan(2_500);
    expect(stack.worker.isAlive()).toBe(true);

    await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - downAt))));
    await redis.start();
    const upAt = Date.now();
    await waitFor(
      async () => ((await client.get('/readyz')).status === 200 ? true : null),
      10_000,
      'readyz to answer 200 again',
    );
    const readyAfterMs = Date.now() - upAt;

    // The worker is back too: a decision and a new run both move at once.
    const snapshot = (await client.get<RunSnapshot>(`/v1/runs/${before.runId}`)).body;
    const call = snapshot.await!.calls[0]!;
    const decided = await client.post<DecisionsResponse>(`/v1/runs/${before.runId}/decisions`, {
      decisions: [{ toolCallId: call.toolCallId, action: 'resume' }],
    });
    expect(decided.status).toBe(202);
    const after = await client.createRun('assistant', 'weather in Quito?');
    await Promise.all([finishes(before.runId, 10_000), finishes(after.runId, 10_000)]);
    const runsAfterMs = Date.now() - upAt;
    console.info(
      `[redis-outage] down ${OUTAGE_MS} ms; readyz 503 in ${ready.ms} ms, create 503 in ${create.ms} ms; ready ${readyAfterMs} ms and runs done ${runsAfterMs} ms after Redis returned`,
    );
    expect(readyAfterMs).toBeLessThan(2_000);
    expect(runsAfterMs).toBeLessThan(2_000);
  }, 60_000);

  it('a worker stopped right after Redis came back (empty) still stops', async () => {
    // BullMQ's forced close can wait forever on a connection Redis dropped; stop() must end.
    const lost = await startRedisProcess({ aof: 'off' });
    const h = await startHarness(lost.url, createDemoAgents(systemClock));
    try {
      await lost.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 100));
      await lost.start();
      await h.stop();
    } finally {
      await lost.stop();
    }
  }, 20_000);
});
