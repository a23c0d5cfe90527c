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
import type {
  CreateRunResponse,
  DecisionsResponse,
  ErrorBody,
  RunEvent,
  RunSnapshot,
} from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { ApiClient, eventsOf } from '@baton/testing/api-harness';
import { silentLogger, startHarness, waitFor, type Harness } from '@baton/testing/worker-harness';

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

async function view(runId: string): Promise<RunSnapshot> {
  return (await a.get<RunSnapshot>(`/v1/runs/${runId}`)).body;
}

type DecisionFate = Extract<RunEvent, { type: 'decision.applied' | 'decision.discarded' }>;

describe('a decision routed to a child after the parent was cancelled', () => {
  it('is refused with 409 run_cancelled, not accepted for a run that will never apply it', async () => {
    const created = await a.post<CreateRunResponse>('/v1/runs', {
      agent: 'tree-batch',
      input: { messages: [{ role: 'user', content: 'call approval,approval' }] },
    });
    const runId = created.body.runId;
    const waiting = await waitFor(
      async () => {
        const v = await view(runId);
        return v.await?.calls?.length === 2 ? v : null;
      },
      30_000,
      'both children to wait for their approval',
    );
    // The first child's call is decided before the cancel, the second's after it.
    const { toolCallId, runId: childId } = waiting.await!.calls[0]!;
    const { toolCallId: otherCall, runId: otherChild } = waiting.await!.calls[1]!;
    // Nobody carries the cancel down to the child (nor applies a decision) until a worker is back.
    await h.workers[0]!.stop(500);
    const early = await a.post<DecisionsResponse>(`/v1/runs/${runId}/decisions`, {
      decisions: [{ decisionId: 'early', toolCallId, action: 'resume' }],
    });
    expect(early.status).toBe(202);
    expect(early.body.routed).toEqual([{ runId: childId, accepted: ['early'], duplicates: [] }]);
    expect((await a.post(`/v1/runs/${runId}/cancel`)).status).toBe(202);
    // Resent, it keeps its original answer, cancel or not.
    const resent = await a.post<DecisionsResponse>(`/v1/runs/${runId}/decisions`, {
      decisions: [{ decisionId: 'early', toolCallId, action: 'resume' }],
    });
    expect(resent.status).toBe(202);
    expect(resent.body.routed).toEqual([{ runId: childId, accepted: [], duplicates: ['early'] }]);

    // The children's calls share an id (call ids are per run): the decision names its child.
    const late = await a.post<ErrorBody>(`/v1/runs/${runId}/decisions`, {
      decisions: [
        { decisionId: 'late', toolCallId: otherCall, runId: otherChild, action: 'resume' },
      ],
    });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('run_cancelled');
    // And so is one sent to the child itself: it is about to be cancelled with its parent.
    const direct = await a.post<ErrorBody>(`/v1/runs/${otherChild as string}/decisions`, {
      decisions: [{ decisionId: 'direct', toolCallId: otherCall, action: 'resume' }],
    });
    expect(direct.status).toBe(409);
    expect(direct.body.error.code).toBe('run_cancelled');
    expect(direct.body.error.message).toContain(runId);

    await h.addWorker(agents);
    for (const id of [runId, childId as string, otherChild as string])
      await waitFor(
        async () => ((await view(id)).status === 'done' ? true : null),
        30_000,
        `run ${id} to end`,
      );
    expect((await view(runId)).termination).toEqual({ kind: 'cancelled' });
    // The decided child may finish before the cascade reaches it; the other cannot.
    const child = await view(childId as string);
    expect(['cancelled', 'natural_end']).toContain(child.termination?.kind);
    // The one accepted before the cancel has exactly one fate in the child's log (the run that
    // took it, named in `routed`): applied (a worker may still get to it before the cascade) or
    // discarded naming the cancel; the snapshot says the same; the refused ones appear nowhere.
    const childEvents = eventsOf(await a.stream(`/v1/runs/${childId as string}/events`));
    const fates = childEvents.filter((e): e is DecisionFate => e.type.startsWith('decision.'));
    expect(fates).toHaveLength(1);
    expect(fates[0]!.decision.decisionId).toBe('early');
    const fate = fates[0]!;
    if (fate.type === 'decision.discarded') expect(fate.reason).toMatch(/cancel/);
    else expect(fate.type).toBe('decision.applied');
    expect(child.decisions).toHaveLength(1);
    expect(child.decisions[0]!.decisionId).toBe('early');
    expect(child.decisions[0]!.discarded).toBe(
      fate.type === 'decision.discarded' ? fate.reason : undefined,
    );
    for (const id of [runId, otherChild as string]) {
      const events = eventsOf(await a.stream(`/v1/runs/${id}/events`));
      expect(events.filter((e) => e.type.startsWith('decision.'))).toEqual([]);
    }
    expect((await view(otherChild as string)).termination).toEqual({ kind: 'cancelled' });
  });
});
