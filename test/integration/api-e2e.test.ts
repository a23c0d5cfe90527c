/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- HTTP replies are untyped JSON; each test asserts their shape */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents, matrixAgentName, matrixAgents, payloadFor } from '@baton/core';
import type { ExecutionMode, ResumeMode, RunEvent, RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/worker';
import {
  ApiClient,
  KEYS,
  eventsOf,
  expectGapless,
  startApiCluster,
  type ApiCluster,
} from '../support/api-harness.ts';

/**
 * Drives a run over HTTP only, one SSE stream per turn: stream (until=suspended) from the last
 * seen event, then answer every awaited call, until the run is done. Returns all events seen.
 */
async function driveToDone(
  api: ApiClient,
  runId: string,
  payload: (
    call: RunSnapshot['await'] extends infer A
      ? A extends { calls: (infer C)[] }
        ? C
        : never
      : never,
  ) => unknown,
): Promise<RunEvent[]> {
  const all: RunEvent[] = [];
  for (let turn = 0; turn < 10; turn += 1) {
    const last = all.at(-1)?.seq ?? 0;
    const stream = await api.stream(`/v1/runs/${runId}/events?until=suspended`, {
      headers: { 'last-event-id': String(last) },
      timeoutMs: 15_000,
    });
    expect([200, 204]).toContain(stream.status);
    if (stream.status === 200) {
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(stream.endedByServer).toBe(true);
    }
    all.push(...eventsOf(stream));
    const snap = await api.get<RunSnapshot>(`/v1/runs/${runId}`);
    expect(snap.status).toBe(200);
    if (snap.body.status === 'done') return all;
    if (snap.body.status !== 'waiting' || !snap.body.await) continue;
    const decisions = snap.body.await.calls.map((call) => {
      const p = payload(call);
      return {
        toolCallId: call.toolCallId,
        action: 'resume',
        ...(p === undefined ? {} : { payload: p }),
      };
    });
    const r = await api.post(`/v1/runs/${runId}/decisions`, { decisions });
    expect(r.status).toBe(202);
    expect(r.body.accepted).toHaveLength(decisions.length);
  }
  throw new Error('run did not finish in 10 turns');
}

describe('API end to end (real Redis, real workers, real HTTP)', () => {
  let c: ApiCluster;
  let api: ApiClient;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), [
      ...createDemoAgents(systemClock),
      ...matrixAgents(),
    ]);
    api = new ApiClient(c.apis[0]!.url, KEYS.a);
  });
  afterAll(async () => {
    await c.stop();
  });

  it('create -> SSE -> suspended -> decision -> done with the demo assistant', async () => {
    const created = await api.post('/v1/runs', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({
      status: 'created',
      turnId: expect.any(String),
      links: { events: `/v1/runs/${created.body.runId}/events` },
    });
    expect(created.headers.get('location')).toBe(`/v1/runs/${created.body.runId}`);
    const runId = created.body.runId as string;

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

    const snap = await api.get<RunSnapshot>(`/v1/runs/${runId}`);
    expect(snap.body.status).toBe('waiting');
    const awaited = snap.body.await!.calls[0]!;
    expect(awaited).toMatchObject({
      toolName: 'deploy_service',
      reason: 'approval',
      resumeMode: 'replay_tool_call',
    });
    expect(awaited.responseSchema).toMatchObject({ type: 'object' });
    expect(snap.body.toolCalls.map((t) => t.toolName)).toEqual(['get_weather', 'deploy_service']);

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

    const done = await api.get<RunSnapshot>(`/v1/runs/${runId}`);
    expect(done.body).toMatchObject({
      status: 'done',
      phase: 'run_end',
      await: null,
      lastSeq: all.length,
    });
    expect(done.body.usage.totalTokens).toBeGreaterThan(0);
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
        const { runId } = await api.createRun(agent, 'go');
        const events = await driveToDone(api, runId, () => payloadFor(resume));
        expectGapless(events);
        expect(events.at(-1)).toMatchObject({
          type: 'run.finished',
          status: 'done',
          termination: { kind: 'natural_end' },
        });
        const applied = events.filter((e) => e.type === 'decision.applied');
        expect(applied.length).toBe(2);
        const snap = await api.get<RunSnapshot>(`/v1/runs/${runId}`);
        expect(snap.body.executionMode).toBe(mode);
        expect(
          snap.body.toolCalls
            .filter((t) => t.status === 'succeeded')
            .map((t) => t.toolCallId)
            .sort(),
        ).toEqual(['E', 'S1', 'S2']);
      }
    }, 60_000);
  }

  it('parallel-assistant (parallel_streaming demo) end to end', async () => {
    const { runId } = await api.createRun('parallel-assistant');
    const events = await driveToDone(api, runId, () => undefined);
    expectGapless(events);
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
  });

  it('threads, runs listing and agents', async () => {
    const agents = await api.get('/v1/agents');
    expect(agents.status).toBe(200);
    expect(agents.body.agents.map((a: { name: string }) => a.name)).toEqual(
      expect.arrayContaining(['assistant', 'parallel-assistant']),
    );
    expect((await api.get('/v1/agents/assistant')).body.executionMode).toBe('sequential');
    expect((await api.get('/v1/agents/nope')).status).toBe(404);

    const first = await api.createRun('assistant', 'weather please', { threadId: 'conv-1' });
    await driveToDone(api, first.runId, () => undefined);
    const second = await api.createRun('assistant', 'and again', { threadId: 'conv-1' });
    await driveToDone(api, second.runId, () => undefined);

    const thread = await api.get('/v1/threads/conv-1');
    expect(thread.status).toBe(200);
    expect(thread.body).toMatchObject({
      threadId: 'conv-1',
      activeRunId: null,
      runIds: [first.runId, second.runId],
    });
    expect(
      thread.body.messages
        .filter((m: { role: string }) => m.role === 'user')
        .map((m: { content: string }) => m.content),
    ).toEqual(['weather please', 'and again']);

    const runs = await api.get('/v1/threads/conv-1/runs?limit=1');
    expect(runs.body.runs.map((r: { runId: string }) => r.runId)).toEqual([second.runId]);
    const page2 = await api.get(
      `/v1/threads/conv-1/runs?limit=1&cursor=${encodeURIComponent(runs.body.nextCursor)}`,
    );
    expect(page2.body.runs.map((r: { runId: string }) => r.runId)).toEqual([first.runId]);
    expect(page2.body.nextCursor).toBeNull();

    const filtered = await api.get('/v1/runs?status=done&agent=assistant&thread=conv-1');
    expect(filtered.body.runs.map((r: { runId: string }) => r.runId)).toEqual([
      second.runId,
      first.runId,
    ]);
    expect((await api.get('/v1/runs?status=waiting&thread=conv-1')).body.runs).toEqual([]);
    expect((await api.get('/v1/threads/never-used')).status).toBe(404);
    expect((await api.get('/v1/threads/never-used/runs')).status).toBe(404);
  });

  it('cancel is 202 and idempotent', async () => {
    const { runId } = await api.createRun('assistant', 'report please');
    const r1 = await api.post(`/v1/runs/${runId}/cancel`);
    expect(r1.status).toBe(202);
    const r2 = await api.post(`/v1/runs/${runId}/cancel`, {});
    expect(r2.status).toBe(202);
    const stream = await api.stream(`/v1/runs/${runId}/events`);
    expect(eventsOf(stream).at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'done',
      termination: { kind: 'cancelled' },
    });
    const r3 = await api.post(`/v1/runs/${runId}/cancel`);
    expect(r3).toMatchObject({ status: 202, body: { runId, status: 'done' } });
  });

  it('serves /healthz, /readyz, /metrics and Bull Board for admins', async () => {
    const anon = new ApiClient(c.apis[0]!.url);
    expect((await anon.get('/healthz')).body).toEqual({ status: 'ok' });
    expect((await anon.get('/readyz')).body).toMatchObject({
      status: 'ok',
      checks: { redis: 'ok', queues: 'ok' },
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
