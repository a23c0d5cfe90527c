/**
 * Decisions racing cancels through the HTTP API with a worker PROCESS: a 202 for a decision
 * means the run applied it or its log says why not (`decision.discarded` with the reason), and
 * the snapshot's `decisions` says the same. 78 of 190 accepted decisions once had no trace.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hashKey, loadApiConfig, startApi, type RunningApi } from '@baton/api';
import type {
  CancelResponse,
  CreateRunResponse,
  DecisionsResponse,
  ErrorBody,
  RunEvent,
  RunSnapshot,
} from '@baton/protocol';
import { ApiClient, eventsOf, type Reply } from '@baton/testing/api-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';
import { silentLogger, testPrefix, waitFor } from '@baton/testing/worker-harness';

let api: RunningApi;
const stack = { client: undefined as unknown as ApiClient };

beforeAll(async () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const key = `races-key-${prefix}`;
  await spawnWorker({ redisUrl, prefix, agents: 'children,demo', probes: false });
  const config = loadApiConfig({
    REDIS_URL: redisUrl,
    BATON_PREFIX: prefix,
    API_KEYS: `races:sha256:${hashKey(key)}`,
    LOG_LEVEL: 'silent',
  });
  api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  stack.client = new ApiClient(api.url, key);
});

afterAll(async () => {
  await api?.close();
  await stopAllWorkerProcesses();
});

async function snapshot(runId: string): Promise<RunSnapshot> {
  return (await stack.client.get<RunSnapshot>(`/v1/runs/${runId}`)).body;
}

async function settled(runId: string, statuses: string[]): Promise<RunSnapshot> {
  return waitFor(
    async () => {
      const s = await snapshot(runId);
      return statuses.includes(s.status) ? s : null;
    },
    60_000,
    `run ${runId} to be ${statuses.join('|')}`,
  );
}

type DecisionFate = Extract<RunEvent, { type: 'decision.applied' | 'decision.discarded' }>;
/** A decision's answer: 202 with the response, or 409 with an error body. */
type DecisionReply = Reply<DecisionsResponse | ErrorBody>;

describe('decisions racing cancels (worker process)', () => {
  it('every decision answered 202 is applied or discarded with a reason, in the log and in the snapshot', async () => {
    const api = stack.client;
    const RUNS = 48;
    const created = await Promise.all(
      Array.from({ length: RUNS }, () =>
        api.post<CreateRunResponse>('/v1/runs', {
          agent: 'assistant',
          input: { messages: [{ role: 'user', content: 'deploy please' }] },
        }),
      ),
    );
    const waiting = await Promise.all(created.map((r) => settled(r.body.runId, ['waiting'])));
    const outcomes = await Promise.all(
      waiting.map(async (s, i) => {
        const runId = s.runId;
        const call = s.await!.calls[0]!.toolCallId;
        // Half send the decision first, half the cancel first; the delays spread the other
        // request over the first one's whole pipeline.
        const delay = (i * 3) % 17;
        const decide = (): Promise<DecisionReply> =>
          api.post<DecisionsResponse | ErrorBody>(`/v1/runs/${runId}/decisions`, {
            decisions: [{ decisionId: `d${i}`, toolCallId: call, action: 'resume' }],
          });
        const cancel = (): Promise<Reply<CancelResponse>> =>
          api.post<CancelResponse>(`/v1/runs/${runId}/cancel`);
        const later = <T>(f: () => Promise<T>): Promise<T> =>
          new Promise((r) => setTimeout(r, delay)).then(f);
        const [decision, cancelled] =
          i % 2 === 0
            ? await Promise.all([decide(), later(cancel)])
            : await Promise.all([later(decide), cancel()]);
        return { runId, decisionId: `d${i}`, decision, cancelled };
      }),
    );
    let accepted = 0;
    const missing: string[] = [];
    for (const o of outcomes) {
      expect(o.cancelled.status).toBe(202);
      expect([202, 409], JSON.stringify(o.decision.body)).toContain(o.decision.status);
      const done = await settled(o.runId, ['done']);
      const events = eventsOf(await api.stream(`/v1/runs/${o.runId}/events`));
      expect(events.at(-1)?.type).toBe('run.finished');
      if (o.decision.status !== 202) {
        expect(['run_cancelled', 'run_done']).toContain((o.decision.body as ErrorBody).error.code);
        continue;
      }
      accepted += 1;
      const fates = events.filter(
        (e): e is DecisionFate =>
          (e.type === 'decision.applied' || e.type === 'decision.discarded') &&
          e.decision.decisionId === o.decisionId,
      );
      if (fates.length !== 1)
        missing.push(`${o.runId}: ${JSON.stringify(events.map((e) => e.type))}`);
      const inSnapshot = done.decisions.filter((d) => d.decisionId === o.decisionId);
      expect(inSnapshot, o.runId).toHaveLength(1);
      if (fates[0]?.type === 'decision.discarded') {
        expect(inSnapshot[0]!.discarded).toBe(fates[0].reason);
        expect(fates[0].reason).toMatch(/cancel/);
      } else expect(inSnapshot[0]!.discarded).toBeUndefined();
    }
    expect(missing).toEqual([]);
    expect(accepted).toBeGreaterThan(0);
  });

  it('a decision routed from a parent to its child, racing the parent cancel: applied or discarded, in the tree', async () => {
    const api = stack.client;
    const RUNS = 24;
    const created = await Promise.all(
      Array.from({ length: RUNS }, () =>
        api.post<CreateRunResponse>('/v1/runs', {
          agent: 'tree-sequential',
          input: { messages: [{ role: 'user', content: 'call approval' }] },
        }),
      ),
    );
    const waiting = await Promise.all(
      created.map((r) =>
        waitFor(
          async () => {
            const s = await snapshot(r.body.runId);
            return s.await?.calls?.[0]?.runId ? s : null;
          },
          60_000,
          'the child to wait',
        ),
      ),
    );
    const outcomes = await Promise.all(
      waiting.map(async (s, i) => {
        const runId = s.runId;
        const { toolCallId, runId: childId } = s.await!.calls[0]!;
        const delay = (i * 3) % 17;
        const decide = (): Promise<DecisionReply> =>
          api.post<DecisionsResponse | ErrorBody>(`/v1/runs/${runId}/decisions`, {
            decisions: [{ decisionId: `t${i}`, toolCallId, action: 'resume' }],
          });
        const cancel = (): Promise<Reply<CancelResponse>> =>
          api.post<CancelResponse>(`/v1/runs/${runId}/cancel`);
        const later = <T>(f: () => Promise<T>): Promise<T> =>
          new Promise((r) => setTimeout(r, delay)).then(f);
        // Every fourth one waits for the decision's answer first: accepted for sure, it races
        // the worker that applies it instead.
        if (i % 4 === 0) {
          const decision = await decide();
          return {
            runId,
            childId: childId as string,
            decisionId: `t${i}`,
            decision,
            cancelled: await cancel(),
          };
        }
        const [decision, cancelled] =
          i % 2 === 0
            ? await Promise.all([decide(), later(cancel)])
            : await Promise.all([later(decide), cancel()]);
        return { runId, childId: childId as string, decisionId: `t${i}`, decision, cancelled };
      }),
    );
    const missing: string[] = [];
    let accepted = 0;
    for (const o of outcomes) {
      expect(o.cancelled.status).toBe(202);
      expect([202, 409], JSON.stringify(o.decision.body)).toContain(o.decision.status);
      await settled(o.runId, ['done']);
      const child = await settled(o.childId, ['done']);
      if (o.decision.status !== 202) continue;
      accepted += 1;
      const events = eventsOf(await api.stream(`/v1/runs/${o.childId}/events`));
      const fates = events.filter(
        (e): e is DecisionFate =>
          (e.type === 'decision.applied' || e.type === 'decision.discarded') &&
          e.decision.decisionId === o.decisionId,
      );
      if (fates.length !== 1)
        missing.push(`${o.childId}: ${JSON.stringify(events.map((e) => e.type))}`);
      expect(child.decisions.filter((d) => d.decisionId === o.decisionId)).toHaveLength(
        fates.length,
      );
    }
    expect(missing).toEqual([]);
    expect(accepted).toBeGreaterThan(0);
  });
});
