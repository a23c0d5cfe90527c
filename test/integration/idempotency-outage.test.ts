/**
 * Redis dies in the middle of a keyed POST /v1/runs: the run is written (AOF fsynced before each
 * reply), its start is lost, and the API cannot release the request's Idempotency-Key claim.
 * When Redis is back, a client retrying as docs/http-api.md asks (another API instance behind the
 * load balancer) is accepted within moments, never refused 409 while the claim would live its
 * 60 s; and the run starts and finishes with no reconciler to rescue it.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import type { CreateRunResponse } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import { waitFor } from '@baton/testing/worker-harness';

let redis: RedisProcess;
let c: ApiCluster;

beforeAll(async () => {
  redis = await startRedisProcess({ aof: 'always' });
  c = await startApiCluster(redis.url, createDemoAgents(systemClock), {
    apis: 2,
    shared: { RECONCILER: '0' },
  });
}, 60_000);

afterAll(async () => {
  await c?.stop();
  await redis?.stop();
});

describe('a keyed run create cut by a Redis crash', () => {
  it('is accepted on retry once Redis is back (no 409), and its run starts and finishes', async () => {
    const first = new ApiClient(c.apis[0]!.url, KEYS.a);
    const second = new ApiClient(c.apis[1]!.url, KEYS.a);
    const body = { agent: 'assistant', input: { messages: [{ role: 'user', content: 'crash' }] } };
    const headers = { 'idempotency-key': `crash-${Date.now()}` };
    // Redis dies right after the run's write, as the API enqueues its start.
    const spy = vi
      .spyOn(c.apis[0]!.api.runtime.queues, 'enqueueStep')
      .mockImplementationOnce(async () => {
        await redis.kill('SIGKILL');
        throw new Error('Connection is closed.');
      });
    let cut;
    try {
      cut = await first.post('/v1/runs', body, headers);
    } finally {
      spy.mockRestore();
    }
    expect(cut.status).toBeGreaterThanOrEqual(500);
    await redis.start();
    const back = Date.now();
    // The client's retries: 503 while the API reconnects, then the answer; never a 409.
    const statuses: number[] = [];
    const accepted = await waitFor(
      async () => {
        const reply = await second.post<CreateRunResponse>('/v1/runs', body, headers);
        statuses.push(reply.status);
        if (reply.status === 409) throw new Error(`refused: ${JSON.stringify(reply.body)}`);
        return reply.status === 202 ? reply : null;
      },
      30_000,
      'the retried create to be accepted',
    );
    const acceptedMs = Date.now() - back;
    expect(statuses.every((s) => s === 202 || s >= 500)).toBe(true);
    const { runId } = accepted.body;
    const done = await waitFor(
      async () => {
        const run = await second.get<{ status: string }>(`/v1/runs/${runId}`);
        return run.body.status === 'done' ? run.body : null;
      },
      30_000,
      `run ${runId} to finish`,
    );
    expect(done.status).toBe('done');
    const listed = await second.get<{ runs: { runId: string }[] }>('/v1/runs?limit=100');
    expect(listed.body.runs.map((r) => r.runId)).toContain(runId);
    console.info(
      `accepted ${acceptedMs} ms after Redis was back (${statuses.length} tries); done ${Date.now() - back} ms after`,
    );
  }, 90_000);
});
