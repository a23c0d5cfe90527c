/**
 * Nothing acknowledged is lost or silently ignored (issue 10, items 4, 5 and 11), through the real
 * HTTP API with real workers:
 * - a cancel answered 202 while the run was unfinished always ends the run Cancelled, even when it
 *   races a decision and the inference that decision starts;
 * - every accepted decision is either applied or recorded as discarded; one sent after the cancel
 *   is refused (409 run_cancelled); one resent after the run ended gets its original answer;
 * - a run waiting under batch_all_suspended with only some calls decided is idle for every
 *   reader: `?until=suspended` answers 204 instead of hanging.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents, matrixAgentName, matrixAgents } from '@baton/core/testing';
import type { CancelResponse, DecisionsResponse, ErrorBody, RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import {
  ApiClient,
  KEYS,
  eventsOf,
  startApiCluster,
  type ApiCluster,
} from '@baton/testing/api-harness';
import { waitFor } from '@baton/testing/worker-harness';

let c: ApiCluster;
let api: ApiClient;

beforeAll(async () => {
  c = await startApiCluster(
    inject('redisUrl'),
    [...createDemoAgents(systemClock), ...matrixAgents()],
    {
      workers: 2,
    },
  );
  api = new ApiClient(c.apis[0]!.url, KEYS.a);
});

afterAll(async () => {
  await c.stop();
});

async function snapshot(runId: string): Promise<RunSnapshot> {
  return (await api.get<RunSnapshot>(`/v1/runs/${runId}`)).body;
}

async function settled(runId: string, status: string): Promise<RunSnapshot> {
  return waitFor(
    async () => {
      const s = await snapshot(runId);
      return s.status === status ? s : null;
    },
    30_000,
    `run ${runId} to be ${status}`,
  );
}

describe('cancel and decisions racing', () => {
  it('an acknowledged cancel always wins; every accepted decision is applied or recorded as discarded', async () => {
    const RUNS = 40;
    const runs = await Promise.all(
      Array.from({ length: RUNS }, () => api.createRun('assistant', 'deploy please')),
    );
    const waiting = await Promise.all(runs.map((r) => settled(r.runId, 'waiting')));
    const outcomes = await Promise.all(
      waiting.map(async (s, i) => {
        // 202 with the response, or 409 with an error body.
        const decide = api.post<DecisionsResponse | ErrorBody>(`/v1/runs/${s.runId}/decisions`, {
          decisions: [
            { decisionId: `d${i}`, toolCallId: s.await!.calls[0]!.toolCallId, action: 'resume' },
          ],
        });
        // Spread the cancels over the decision's whole pipeline (apply, replay, inference).
        await new Promise((r) => setTimeout(r, i % 8));
        const cancel = api.post<CancelResponse>(`/v1/runs/${s.runId}/cancel`);
        return { runId: s.runId, decision: await decide, cancel: await cancel };
      }),
    );
    let cancelledWhileRunning = 0;
    for (const o of outcomes) {
      expect(o.cancel.status).toBe(202);
      expect([202, 409]).toContain(o.decision.status);
      const done = await settled(o.runId, 'done');
      if (o.cancel.body.status !== 'done') {
        cancelledWhileRunning += 1;
        expect(done.termination, o.runId).toEqual({ kind: 'cancelled' });
        expect(done.cancelRequested).toBe(true);
      }
      const events = eventsOf(await api.stream(`/v1/runs/${o.runId}/events`));
      expect(events.filter((e) => e.type === 'run.cancel_requested').length).toBeLessThanOrEqual(1);
      if (o.decision.status === 202) {
        // Accepted: applied or discarded, never silently dropped.
        const fates = events.filter(
          (e) =>
            (e.type === 'decision.applied' || e.type === 'decision.discarded') &&
            e.decision.decisionId === (o.decision.body as DecisionsResponse).accepted[0],
        );
        expect(fates, o.runId).toHaveLength(1);
      } else {
        expect((o.decision.body as ErrorBody).error.code).toBe('run_cancelled');
      }
      expect(events.at(-1)?.type).toBe('run.finished');
    }
    expect(cancelledWhileRunning).toBeGreaterThan(0);
  });

  it('a decision after the cancel is refused; a resent one gets its original answer after the end', async () => {
    const run = await api.createRun('assistant', 'deploy please');
    const s = await settled(run.runId, 'waiting');
    const call = s.await!.calls[0]!.toolCallId;
    const first = await api.post(`/v1/runs/${run.runId}/decisions`, {
      decisions: [{ decisionId: 'keep', toolCallId: call, action: 'resume' }],
    });
    expect(first.status).toBe(202);
    await settled(run.runId, 'done');
    const again = await api.post(`/v1/runs/${run.runId}/decisions`, {
      decisions: [{ decisionId: 'keep', toolCallId: call, action: 'resume' }],
    });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ accepted: [], duplicates: ['keep'], status: 'done' });
    const other = await api.post<ErrorBody>(`/v1/runs/${run.runId}/decisions`, {
      decisions: [{ decisionId: 'new', toolCallId: call, action: 'resume' }],
    });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('run_done');

    const second = await api.createRun('assistant', 'deploy please');
    const w = await settled(second.runId, 'waiting');
    // Once a cancel is acknowledged, a new decision is refused rather than accepted and dropped.
    const cancel = await api.post(`/v1/runs/${second.runId}/cancel`);
    expect(cancel.status).toBe(202);
    const late = await api.post<ErrorBody>(`/v1/runs/${second.runId}/decisions`, {
      decisions: [{ toolCallId: w.await!.calls[0]!.toolCallId, action: 'resume' }],
    });
    expect(late.status).toBe(409);
    expect(['run_cancelled', 'run_done']).toContain(late.body.error.code);
    expect((await settled(second.runId, 'done')).termination).toEqual({ kind: 'cancelled' });
  });
});

describe('one idle predicate', () => {
  it('until=suspended ends for a batch_all_suspended run with only some calls decided', async () => {
    const agent = matrixAgentName(
      'parallel_batch_approval',
      'batch_all_suspended',
      'replay_tool_call',
    );
    const run = await api.createRun(agent, 'go');
    const s = await settled(run.runId, 'waiting');
    const suspended = s.await!.calls.map((c) => c.toolCallId);
    expect(suspended).toHaveLength(2);
    const partial = await api.post(`/v1/runs/${run.runId}/decisions`, {
      decisions: [{ toolCallId: suspended[0], action: 'resume' }],
    });
    expect(partial.status).toBe(202);
    const last = (await snapshot(run.runId)).lastSeq;
    // Nothing will happen until the other call is decided: the stream has nothing to wait for.
    const idle = await api.get(`/v1/runs/${run.runId}/events?until=suspended&after=${last}`);
    expect(idle.status).toBe(204);
    const stream = await api.stream(`/v1/runs/${run.runId}/events?until=suspended`, {
      timeoutMs: 5_000,
    });
    expect(eventsOf(stream).at(-1)).toMatchObject({ type: 'run.finished', status: 'waiting' });
    await api.post(`/v1/runs/${run.runId}/decisions`, {
      decisions: [{ toolCallId: suspended[1], action: 'resume' }],
    });
    expect((await settled(run.runId, 'done')).termination).toEqual({ kind: 'natural_end' });
  });
});
