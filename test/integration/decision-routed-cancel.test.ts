/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-explicit-any -- HTTP replies are untyped JSON; each test asserts their shape */
/**
 * A decision sent to a parent run for its child's call is routed to the child. Once the parent's
 * cancel is acknowledged, such a decision must be refused (409 run_cancelled), as one for the
 * parent's own call is: its 202 named a run that will never apply it, and the parent's log said
 * nothing about it. The worker is stopped between the cancel and the decision, so the cascade
 * that would cancel the child cannot come first (the window is made permanent).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { childAgents, createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { ApiClient, eventsOf } from '../support/api-harness.ts';
import { silentLogger, startHarness, waitFor, type Harness } from '../support/worker-harness.ts';

const KEY = 'routed-cancel-key-123';
const agents = [...createDemoAgents(systemClock), ...childAgents()];
let h: Harness;
let api: RunningApi;
let a: ApiClient;

beforeAll(async () => {
  h = await startHarness(inject('redisUrl'), agents);
  const config = loadApiConfig({
    REDIS_URL: h.config.REDIS_URL,
    BATON_PREFIX: h.prefix,
    API_KEYS: `routed:${KEY}`,
    LOG_LEVEL: 'silent',
  });
  api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  a = new ApiClient(api.url, KEY);
});

afterAll(async () => {
  await api?.close();
  await h?.stop();
});

async function view(runId: string): Promise<Record<string, any>> {
  return (await a.get(`/v1/runs/${runId}`)).body as Record<string, any>;
}

describe('a decision routed to a child after the parent was cancelled', () => {
  it('is refused with 409 run_cancelled, not accepted for a run that will never apply it', async () => {
    const created = await a.post('/v1/runs', {
      agent: 'tree-sequential',
      input: { messages: [{ role: 'user', content: 'call approval' }] },
    });
    const runId = created.body.runId as string;
    const waiting = await waitFor(
      async () => {
        const v = await view(runId);
        return v.await?.calls?.[0]?.runId ? v : null;
      },
      30_000,
      'the child to wait for its approval',
    );
    const { toolCallId, runId: childId } = waiting.await.calls[0];
    // Nobody carries the cancel down to the child until a worker is back.
    await h.workers[0]!.stop(500);
    expect((await a.post(`/v1/runs/${runId}/cancel`)).status).toBe(202);

    const late = await a.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ decisionId: 'late', toolCallId, action: 'resume' }],
    });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('run_cancelled');
    // Naming the child explicitly through the parent is the same request.
    const named = await a.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ decisionId: 'named', toolCallId, runId: childId, action: 'resume' }],
    });
    expect(named.status).toBe(409);
    expect(named.body.error.code).toBe('run_cancelled');
    // And so is one sent to the child itself: it is about to be cancelled with its parent.
    const direct = await a.post(`/v1/runs/${childId as string}/decisions`, {
      decisions: [{ decisionId: 'direct', toolCallId, action: 'resume' }],
    });
    expect(direct.status).toBe(409);
    expect(direct.body.error.code).toBe('run_cancelled');
    expect(direct.body.error.message).toContain(runId);

    await h.addWorker(agents);
    for (const id of [runId, childId as string])
      await waitFor(
        async () => ((await view(id)).status === 'done' ? true : null),
        30_000,
        `run ${id} to end`,
      );
    expect((await view(runId)).termination).toEqual({ kind: 'cancelled' });
    const child = await view(childId as string);
    expect(child.termination).toEqual({ kind: 'cancelled' });
    // Nothing was accepted, so nothing is applied or discarded anywhere in the tree.
    for (const id of [runId, childId as string]) {
      const events = eventsOf(await a.stream(`/v1/runs/${id}/events`));
      expect(events.filter((e: any) => e.type.startsWith('decision.'))).toEqual([]);
    }
  });
});
