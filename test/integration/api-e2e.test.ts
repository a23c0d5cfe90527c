import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonClient } from '@baton/client';
import { createDemoAgents, matrixAgentName, matrixAgents, payloadFor } from '@baton/core/testing';
import type {
  AwaitedToolCall,
  DecisionInput,
  ExecutionMode,
  JsonValue,
  ResumeMode,
  RunEvent,
} from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import {
  ApiClient,
  KEYS,
  eventsOf,
  expectGapless,
  startApiCluster,
  type ApiCluster,
} from '@baton/testing/api-harness';

/**
 * Drives a run over HTTP only with the typed client, one event stream per turn: stream
 * (until=suspended) from the last seen event, then answer every awaited call, until the run is
 * done. Returns all events seen. (The wire format itself, frames and stream ends, is asserted
 * with raw HTTP in the first test.)
 */
async function driveToDone(
  baton: BatonClient,
  runId: string,
  payload: (call: AwaitedToolCall) => JsonValue | undefined,
): Promise<RunEvent[]> {
  const all: RunEvent[] = [];
  for (let turn = 0; turn < 10; turn += 1) {
    const stream = baton.runs.stream(runId, { until: 'suspended', after: all.at(-1)?.seq ?? 0 });
    for await (const event of stream) all.push(event);
    // the stream ended by itself: no reconnect was needed against a healthy API
    expect(stream.reconnects).toBe(0);
    const snap = await baton.runs.get(runId);
    if (snap.status === 'done') return all;
    if (snap.status !== 'waiting' || !snap.await) continue;
    const decisions = snap.await.calls.map((call): DecisionInput => {
      const p = payload(call);
      return {
        toolCallId: call.toolCallId,
        action: 'resume',
        ...(p === undefined ? {} : { payload: p }),
      };
    });
    const r = await baton.runs.decide(runId, decisions);
    expect(r.accepted).toHaveLength(decisions.length);
  }
  throw new Error('run did not finish in 10 turns');
}

describe('API end to end (real Redis, real workers, real HTTP)', () => {
  let c: ApiCluster;
  /** Raw HTTP, for what the wire itself must look like (headers, SSE frames, statuses). */
  let api: ApiClient;
  let baton: BatonClient;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), [
      ...createDemoAgents(systemClock),
      ...matrixAgents(),
    ]);
    api = new ApiClient(c.apis[0]!.url, KEYS.a);
    baton = new BatonClient({ baseUrl: c.apis[0]!.url, apiKey: KEYS.a });
  });
  afterAll(async () => {
    await c.stop();
  });

  it('create -> SSE -> suspended -> decision -> done with the demo assistant', async () => {
    const created = await api.post<{ runId: string }>('/v1/runs', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    expect(created.status).toBe(202);
    const runId = created.body.runId;
    expect(created.body).toMatchObject({
      status: 'created',
      turnId: expect.any(String) as unknown,
      links: { events: `/v1/runs/${runId}/events` },
    });
    expect(created.headers.get('location')).toBe(`/v1/runs/${runId}`);

    const first = await api.stream(`/v1/runs/${runId}/events?until=suspended`);
    expect(first.endedByServer).toBe(true);
    const firstEvents = eventsOf(first);
    // frames carry id = seq and event = type
    for (const m of first.messages) {
      const e = JSON.parse(m.data) as RunEvent;
      expect(m.lastEventId).toBe(String(e.seq));
      expect(m.type).toBe(e.type);
    }
    expect(firstEvents.at(-1)).toMatchObject({ type: 'run.finished', status: 'waiting' });

    const snap = await baton.runs.get(runId);
    expect(snap.status).toBe('waiting');
    const awaited = snap.await!.calls[0]!;
    expect(awaited).toMatchObject({
      toolName: 'deploy_service',
      reason: 'approval',
      resumeMode: 'replay_tool_call',
    });
    expect(awaited.responseSchema).toMatchObject({ type: 'object' });
    expect(snap.toolCalls.map((t) => t.toolName)).toEqual(['get_weather', 'deploy_service']);

    const decided = await api.post(`/v1/runs/${runId}/decisions`, {
      decisions: [
        { toolCallId: awaited.toolCallId, action: 'resume', payload: { comment: 'ship it' } },
      ],
    });
    expect(decided.status).toBe(202);
    const rest = await api.stream(`/v1/runs/${runId}/events`, {
      headers: { 'last-event-id': first.lastEventId },
    });
    expect(rest.endedByServer).toBe(true);
    const all = [...firstEvents, ...eventsOf(rest)];
    expectGapless(all);
    expect(all.at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'done',
      termination: { kind: 'natural_end' },
    });

    const done = await baton.runs.get(runId);
    expect(done).toMatchObject({
      status: 'done',
      phase: 'run_end',
      await: null,
      lastSeq: all.length,
    });
    expect(done.usage.totalTokens).toBeGreaterThan(0);
    // A stream of a finished run with nothing left to send: 204 (EventSource stops reconnecting)
    const after = await api.stream(`/v1/runs/${runId}/events`, {
      headers: { 'last-event-id': String(all.length) },
    });
    expect(after.status).toBe(204);
    // ?after= replays from the durable stream too
    const replay = await api.stream(`/v1/runs/${runId}/events?after=${all.length - 3}`);
    expect(eventsOf(replay).map((e) => e.seq)).toEqual([
      all.length - 2,
      all.length - 1,
      all.length,
    ]);
  });

  const modes: ExecutionMode[] = ['sequential', 'parallel_batch_approval', 'parallel_streaming'];
  const resumes: ResumeMode[] = [
    'replay_tool_call',
    'use_decision_as_tool_result',
    'pass_decision_to_tool',
  ];
  for (const mode of modes) {
    it(`${mode}: every resume mode reaches done over HTTP`, async () => {
      for (const resume of resumes) {
        const agent = matrixAgentName(mode, 'batch_all_suspended', resume);
        const { runId } = await baton.runs.create({
          agent,
          input: { messages: [{ role: 'user', content: 'go' }] },
        });
        const events = await driveToDone(baton, runId, () => payloadFor(resume));
        expectGapless(events);
        expect(events.at(-1)).toMatchObject({
          type: 'run.finished',
          status: 'done',
          termination: { kind: 'natural_end' },
        });
        const applied = events.filter((e) => e.type === 'decision.applied');
        expect(applied.length).toBe(2);
        const snap = await baton.runs.get(runId);
        expect(snap.executionMode).toBe(mode);
        expect(
          snap.toolCalls
            .filter((t) => t.status === 'succeeded')
            .map((t) => t.toolCallId)
            .sort(),
        ).toEqual(['E', 'S1', 'S2']);
      }
    }, 60_000);
  }

  it('parallel-assistant (parallel_streaming demo) end to end', async () => {
    const { runId } = await baton.runs.create({
      agent: 'parallel-assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    const events = await driveToDone(baton, runId, () => undefined);
    expectGapless(events);
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
  });

  it('threads, runs listing and agents', async () => {
    const agents = await baton.agents.list();
    expect(agents.map((a) => a.name)).toEqual(
      expect.arrayContaining(['assistant', 'parallel-assistant']),
    );
    expect((await baton.agents.get('assistant')).executionMode).toBe('sequential');
    await expect(baton.agents.get('nope')).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    });

    const start = (content: string) =>
      baton.runs.create({
        agent: 'assistant',
        threadId: 'conv-1',
        input: { messages: [{ role: 'user', content }] },
      });
    const first = await start('weather please');
    await driveToDone(baton, first.runId, () => undefined);
    const second = await start('and again');
    await driveToDone(baton, second.runId, () => undefined);

    const thread = await baton.threads.get('conv-1');
    expect(thread).toMatchObject({
      threadId: 'conv-1',
      activeRunId: null,
      runIds: [first.runId, second.runId],
    });
    expect(thread.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'weather please',
      'and again',
    ]);

    const runs = await baton.threads.runs('conv-1', { limit: 1 });
    expect(runs.runs.map((r) => r.runId)).toEqual([second.runId]);
    const page2 = await baton.threads.runs('conv-1', { limit: 1, cursor: runs.nextCursor! });
    expect(page2.runs.map((r) => r.runId)).toEqual([first.runId]);
    expect(page2.nextCursor).toBeNull();

    const filtered = await baton.runs.list({
      status: 'done',
      agent: 'assistant',
      thread: 'conv-1',
    });
    expect(filtered.runs.map((r) => r.runId)).toEqual([second.runId, first.runId]);
    expect((await baton.runs.list({ status: 'waiting', thread: 'conv-1' })).runs).toEqual([]);
    await expect(baton.threads.get('never-used')).rejects.toMatchObject({ code: 'not_found' });
    await expect(baton.threads.runs('never-used')).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    });
  });

  it('cancel is 202 and idempotent', async () => {
    const { runId } = await baton.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'report please' }] },
    });
    expect((await baton.runs.cancel(runId)).runId).toBe(runId);
    // an empty JSON body is accepted too
    const r2 = await api.post(`/v1/runs/${runId}/cancel`, {});
    expect(r2.status).toBe(202);
    const events: RunEvent[] = [];
    for await (const e of baton.runs.stream(runId)) events.push(e);
    expect(events.at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'done',
      termination: { kind: 'cancelled' },
    });
    expect(await baton.runs.cancel(runId)).toEqual({ runId, status: 'done' });
  });

  it('serves /healthz, /readyz, /metrics and Bull Board for admins', async () => {
    const anon = new ApiClient(c.apis[0]!.url);
    expect((await anon.get('/healthz')).body).toEqual({ status: 'ok' });
    expect((await anon.get('/readyz')).body).toMatchObject({
      status: 'ok',
      checks: { redis: 'ok', queues: 'ok' },
      workers: { state: 'up' },
    });
    expect((await anon.get('/metrics')).status).toBe(401);
    expect((await api.get('/metrics')).status).toBe(403);
    const metrics = await api.withKey(KEYS.admin).get<string>('/metrics');
    for (const name of [
      'baton_http_request_duration_seconds',
      'baton_runs{activity="waiting"}',
      'baton_queue_jobs{queue="steps"',
      'baton_step_duration_seconds',
      'baton_tool_duration_seconds',
      'baton_sse_connections',
      'baton_event_lag_seconds',
    ])
      expect(metrics.body).toContain(name);
    const admin = api.withKey(KEYS.admin);
    const board = await admin.get<string>('/admin/queues');
    expect(board.status).toBe(200);
    expect(board.body).toContain('<html');
    const queues = await admin.get('/admin/queues/api/queues');
    expect(queues.status).toBe(200);
    expect(JSON.stringify(queues.body)).toMatch(/steps/);
    expect(JSON.stringify(queues.body)).toMatch(/tools/);
    // Basic auth (what a browser prompts for) works with the admin key as the password
    const basic = await fetch(`${c.apis[0]!.url}/admin/queues`, {
      headers: { authorization: `Basic ${Buffer.from(`admin:${KEYS.admin}`).toString('base64')}` },
    });
    expect(basic.status).toBe(200);
  });
});
