import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineTool, ScriptedModel, toolResult, type AgentDefinition } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import type { RunEvent, RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { z } from 'zod';
import {
  ApiClient,
  KEYS,
  eventsOf,
  expectGapless,
  startApiCluster,
  type ApiCluster,
} from '@baton/testing/api-harness';

/** Many steps with a short nap each: a run that keeps emitting events for a while. */
function tickerAgent(): AgentDefinition {
  const nap = defineTool({
    name: 'nap',
    description: 'sleeps a little',
    inputSchema: z.object({ ms: z.number() }),
    execute: async ({ ms }) => {
      await new Promise((r) => setTimeout(r, ms));
      return toolResult.success({ slept: ms });
    },
  });
  const turns = Array.from({ length: 8 }, (_, i) => ({
    text: `tick ${i} `.repeat(3),
    toolCalls: [{ id: `nap-${i}`, name: 'nap', arguments: { ms: 40 } }],
  }));
  return {
    name: 'ticker',
    model: new ScriptedModel([...turns, { text: 'all ticks done' }]),
    tools: [nap],
    executionMode: 'sequential',
  };
}

describe('two API instances, two workers', () => {
  let c: ApiCluster;
  let a: ApiClient;
  let b: ApiClient;
  beforeAll(async () => {
    c = await startApiCluster(
      inject('redisUrl'),
      [...createDemoAgents(systemClock), tickerAgent()],
      { apis: 2, workers: 2 },
    );
    a = new ApiClient(c.apis[0]!.url, KEYS.a);
    b = new ApiClient(c.apis[1]!.url, KEYS.a);
  });
  afterAll(async () => {
    await c.stop();
  });

  it('drop the SSE connection mid-run, reconnect with Last-Event-ID on the other instance: every event exactly once, in order', async () => {
    const { runId } = await a.createRun('ticker', 'tick');
    const collected: RunEvent[] = [];
    let url = a;
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const headers =
        collected.length > 0 ? { 'last-event-id': String(collected.at(-1)!.seq) } : undefined;
      // drop the connection after a few events each time, alternating instances
      const result = await url.stream(`/v1/runs/${runId}/events`, {
        ...(headers ? { headers } : {}),
        stopWhen: (_m, all) => all.length >= 7,
      });
      if (result.status === 204) break;
      expect(result.status).toBe(200);
      collected.push(...eventsOf(result));
      if (result.endedByServer) break;
      url = url === a ? b : a;
    }
    expectGapless(collected);
    expect(collected.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
    expect(collected.length).toBeGreaterThan(40);
    const snap = await b.get<RunSnapshot>(`/v1/runs/${runId}`);
    expect(snap.body.lastSeq).toBe(collected.length);
  }, 30_000);

  it('a run created on one instance is streamed, decided and finished through the other', async () => {
    const { runId } = await a.createRun('assistant', 'deploy please');
    const first = await b.stream(`/v1/runs/${runId}/events?until=suspended`);
    expect(first.endedByServer).toBe(true);
    const snap = await b.get<RunSnapshot>(`/v1/runs/${runId}`);
    expect(snap.body.status).toBe('waiting');
    // a live stream on A is open while B takes the decision
    const live = a.stream(`/v1/runs/${runId}/events`, {
      headers: { 'last-event-id': first.lastEventId },
    });
    const decided = await b.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ toolCallId: snap.body.await!.calls[0]!.toolCallId, action: 'resume' }],
    });
    expect(decided.status).toBe(202);
    const rest = await live;
    const all = [...eventsOf(first), ...eventsOf(rest)];
    expectGapless(all);
    expect(all.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
  });

  it('a run created on one instance is cancelled through the other while a stream on the first follows it', async () => {
    const { runId } = await a.createRun('assistant', 'report please');
    const live = a.stream(`/v1/runs/${runId}/events`);
    await new Promise((r) => setTimeout(r, 100));
    const cancelled = await b.post(`/v1/runs/${runId}/cancel`);
    expect(cancelled.status).toBe(202);
    const events = eventsOf(await live);
    expectGapless(events);
    expect(events.at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'done',
      termination: { kind: 'cancelled' },
    });
  });

  it('concurrent streams on both instances see the same sequence', async () => {
    const { runId } = await b.createRun('ticker', 'tick');
    const [x, y] = await Promise.all([
      a.stream(`/v1/runs/${runId}/events`),
      b.stream(`/v1/runs/${runId}/events`),
    ]);
    expectGapless(eventsOf(x));
    expect(eventsOf(x)).toEqual(eventsOf(y));
  });

  it('heartbeat comments keep idle streams alive', async () => {
    const { runId } = await a.createRun('assistant', 'deploy please');
    const first = await a.stream(`/v1/runs/${runId}/events?until=suspended`);
    // the run waits for a decision: the open stream gets only heartbeats (250 ms in tests)
    const idle = await b.stream(`/v1/runs/${runId}/events`, {
      headers: { 'last-event-id': first.lastEventId },
      timeoutMs: 900,
    });
    expect(idle.messages).toEqual([]);
    expect(idle.comments).toBeGreaterThanOrEqual(2);
    await a.post(`/v1/runs/${runId}/cancel`);
  });
});
