import { HttpAgent, verifyEvents, type AgentSubscriber, type BaseEvent } from '@ag-ui/client';
import { createDemoAgents } from '@baton/core/testing';
import type { RunEvent, RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ApiClient,
  KEYS,
  eventsOf,
  expectGapless,
  startApiCluster,
  type ApiCluster,
} from '@baton/testing/api-harness';
import { until } from '@baton/testing/ai-chat';
import { SEED_AGENT, seedAgent } from '@baton/testing/protocol-agents';

/**
 * AG-UI against a live Baton (real Redis, real worker, real HTTP), driven by @ag-ui/client's
 * HttpAgent: it builds RunAgentInput, parses the SSE, verifies the protocol (verifyEvents) and
 * keeps messages, state and pending interrupts.
 */
/** An AG-UI event as it came over the wire (type is the enum's string value). */
interface Ev {
  readonly type: string;
  readonly toolCallId?: string;
  readonly content?: string;
  readonly code?: string;
  readonly outcome?: { readonly type: string };
  readonly metadata?: { readonly baton?: { readonly runId?: string } };
  readonly [field: string]: unknown;
}
const wire = (event: BaseEvent): Ev => ({ ...event });
const TIMEOUT = 20_000;
let seq = 0;
const threadId = (name: string): string => `ag-${name}-${Date.now().toString(36)}-${++seq}`;

describe('AG-UI against a live server', () => {
  let c: ApiCluster;
  let base: string;
  let api: ApiClient;
  const headers = { authorization: `Bearer ${KEYS.a}` };

  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), [
      ...createDemoAgents(systemClock),
      seedAgent(systemClock),
    ]);
    base = c.apis[0]!.url;
    api = new ApiClient(base, KEYS.a);
  });
  afterAll(async () => {
    await c.stop();
  });

  function agentFor(thread: string, text: string, key: string = KEYS.a): HttpAgent {
    return new HttpAgent({
      url: `${base}/v1/ag-ui`,
      headers: { authorization: `Bearer ${key}` },
      threadId: thread,
      initialMessages: [{ id: `u-${++seq}`, role: 'user', content: text }],
    });
  }

  /** runAgent with a subscriber that records every event; the events are re-verified too. */
  async function run(
    agent: HttpAgent,
    params: Parameters<HttpAgent['runAgent']>[0],
  ): Promise<{ events: Ev[]; errors: Ev[] }> {
    const raw: BaseEvent[] = [];
    const events: Ev[] = [];
    const errors: Ev[] = [];
    const subscriber: AgentSubscriber = {
      onEvent: ({ event }) => {
        raw.push(event);
        events.push(wire(event));
      },
      onRunErrorEvent: ({ event }) => {
        errors.push(wire(event));
      },
    };
    await agent.runAgent(params, subscriber).catch((error: unknown) => {
      if (errors.length === 0) throw error;
    });
    await lastValueFrom(from(raw).pipe(verifyEvents(false), toArray()));
    return { events, errors };
  }

  const types = (events: Ev[]): string[] => events.map((e) => e.type);
  const batonRunOf = (events: Ev[]): string => events.at(-1)?.metadata?.baton?.runId ?? '';

  it(
    'a run streams verified AG-UI events; frames are LF-only data lines without [DONE]',
    async () => {
      const thread = threadId('weather');
      const agent = agentFor(thread, 'what is the weather?');
      const { events } = await run(agent, {
        runId: 'ag-1',
        forwardedProps: { agent: 'assistant' },
      });
      expect(events[0]).toMatchObject({ type: 'RUN_STARTED', threadId: thread, runId: 'ag-1' });
      expect(events.at(-1)).toMatchObject({
        type: 'RUN_FINISHED',
        threadId: thread,
        runId: 'ag-1',
        outcome: { type: 'success' },
      });
      expect(types(events)).toEqual(
        expect.arrayContaining([
          'STEP_STARTED',
          'TEXT_MESSAGE_START',
          'TEXT_MESSAGE_CONTENT',
          'TEXT_MESSAGE_END',
          'TOOL_CALL_START',
          'TOOL_CALL_ARGS',
          'TOOL_CALL_END',
          'TOOL_CALL_RESULT',
          'STEP_FINISHED',
        ]),
      );
      expect(agent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(agent.messages.at(-1)!.content).toMatch(/^All done\./);

      // Same event log: watchable over native SSE.
      const native = eventsOf(await api.stream(`/v1/runs/${batonRunOf(events)}/events`));
      expectGapless(native);
      expect(native.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });

      // The wire format itself.
      const res = await fetch(`${base}/v1/ag-ui`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({
          threadId: threadId('raw'),
          runId: 'raw-1',
          messages: [{ id: 'u1', role: 'user', content: 'weather?' }],
          tools: [],
          context: [],
          state: {},
          forwardedProps: {}, // the configured default agent (assistant)
        }),
        signal: AbortSignal.timeout(TIMEOUT),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const text = await res.text();
      expect(text).not.toContain('\r');
      expect(text).not.toContain('[DONE]');
      const frames = text.split('\n\n').filter((f) => f !== '' && !f.startsWith(':'));
      for (const frame of frames) expect(frame).toMatch(/^data: \{.*\}$/);
      expect(JSON.parse(frames.at(-1)!.slice(6))).toMatchObject({ type: 'RUN_FINISHED' });
    },
    TIMEOUT,
  );

  it.each([
    {
      name: 'resolved',
      resume: { status: 'resolved', payload: { comment: 'ship it' } },
      result: /"deploymentId"/,
    },
    { name: 'cancelled', resume: { status: 'cancelled' }, result: /cancel/ },
  ] as const)(
    'approval interrupt, then a $name resume continues the same Baton run',
    async ({ resume, result }) => {
      const thread = threadId(`deploy-${resume.status}`);
      const agent = agentFor(thread, 'deploy please');
      const first = await run(agent, { runId: 'ag-1', forwardedProps: { agent: 'assistant' } });
      const finished = first.events.at(-1)!;
      expect(finished).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'interrupt' } });
      // The snapshots come right before the interrupting RUN_FINISHED.
      expect(types(first.events).slice(-3)).toEqual([
        'STATE_SNAPSHOT',
        'MESSAGES_SNAPSHOT',
        'RUN_FINISHED',
      ]);
      expect(agent.pendingInterrupts).toHaveLength(1);
      const interrupt = agent.pendingInterrupts[0]!;
      expect(interrupt).toMatchObject({
        reason: 'tool_call',
        message: 'Deploy "checkout" to "production"?',
        responseSchema: { type: 'object' },
      });
      expect(interrupt.id).toBe(interrupt.toolCallId);
      const runId = batonRunOf(first.events);

      // The client refuses to run on without answering; a fresh client on the same thread that
      // sends a new message gets the server's RUN_ERROR.
      await expect(agent.runAgent({ runId: 'ag-x' })).rejects.toThrow(/pending interrupt/);
      const stranger = agentFor(thread, 'something else');
      const refused = await run(stranger, {
        runId: 'ag-y',
        forwardedProps: { agent: 'assistant' },
      });
      expect(refused.events).toEqual([
        expect.objectContaining({ type: 'RUN_ERROR', code: 'interrupts_pending' }),
      ]);
      expect(refused.errors).toHaveLength(1);

      const second = await run(agent, {
        runId: 'ag-2',
        resume: [{ interruptId: interrupt.id, ...resume }],
      });
      expect(second.events[0]).toMatchObject({ type: 'RUN_STARTED', runId: 'ag-2' });
      expect(second.events.at(-1)).toMatchObject({
        type: 'RUN_FINISHED',
        runId: 'ag-2',
        outcome: { type: 'success' },
      });
      expect(batonRunOf(second.events)).toBe(runId);
      // The resumed call: only its result, for the ORIGINAL tool call id.
      const forCall = second.events.filter((e) => e.toolCallId === interrupt.toolCallId);
      expect(types(forCall)).toEqual(['TOOL_CALL_RESULT']);
      expect(forCall[0]!.content).toMatch(result);
      expect(agent.pendingInterrupts).toEqual([]);
      expect(
        agent.messages.find((m) => m.role === 'tool' && m.toolCallId === interrupt.toolCallId),
      ).toBeDefined();
      expect(agent.messages.at(-1)).toMatchObject({ role: 'assistant' });
      expect(agent.messages.at(-1)!.content).toMatch(/^All done\./);

      const snapshot = await api.get<RunSnapshot>(`/v1/runs/${runId}`);
      expect(snapshot.body).toMatchObject({ status: 'done' });
      const calls = snapshot.body.toolCalls;
      const outcome = calls.find((t) => t.toolCallId === interrupt.toolCallId)!;
      expect(outcome.status).toBe(resume.status === 'resolved' ? 'succeeded' : 'cancelled');
    },
    TIMEOUT,
  );

  it(
    'client-side tool: the resume payload becomes the tool result (UseDecisionAsToolResult)',
    async () => {
      const agent = agentFor(threadId('client'), 'please confirm');
      await run(agent, { runId: 'ag-1', forwardedProps: { agent: 'assistant' } });
      const [interrupt] = agent.pendingInterrupts;
      expect(interrupt).toMatchObject({
        reason: 'tool_call',
        metadata: { baton: { suspendReason: 'client_tool', toolName: 'confirm_in_browser' } },
      });
      const second = await run(agent, {
        runId: 'ag-2',
        resume: [{ interruptId: interrupt!.id, status: 'resolved', payload: { answer: 'yes' } }],
      });
      expect(second.events.find((e) => e.type === 'TOOL_CALL_RESULT')).toMatchObject({
        toolCallId: interrupt!.toolCallId,
        content: '{"answer":"yes"}',
      });
      expect(second.events.at(-1)).toMatchObject({ outcome: { type: 'success' } });
    },
    TIMEOUT,
  );

  /** t0–t3: A and B interrupt, C runs ~500 ms; the AG-UI run ends once C is done. */
  async function seedStart(agent: HttpAgent) {
    const first = await run(agent, { runId: 'ag-1', forwardedProps: { agent: SEED_AGENT } });
    const results = first.events.filter((e) => e.type === 'TOOL_CALL_RESULT');
    expect(results).toHaveLength(1);
    expect(results[0]!.content).toMatch(/"tool":"tool_C"/);
    expect(first.events.at(-1)).toMatchObject({ outcome: { type: 'interrupt' } });
    expect(agent.pendingInterrupts.map((i) => i.metadata?.['baton'] as unknown)).toMatchObject([
      { toolName: 'tool_A', suspendReason: 'approval' },
      { toolName: 'tool_B', suspendReason: 'approval' },
    ]);
    const [a, b] = agent.pendingInterrupts;
    return { first, a: a!, b: b!, runId: batonRunOf(first.events) };
  }

  async function expectSeedLog(runId: string, finishes: string[]): Promise<void> {
    const native = eventsOf(await api.stream(`/v1/runs/${runId}/events`));
    expectGapless(native);
    expect(
      native
        .filter((e): e is Extract<RunEvent, { type: 'run.finished' }> => e.type === 'run.finished')
        .map((e) => e.status),
    ).toEqual(finishes);
  }

  it(
    'seed t0–t7, one interrupt at a time: the server takes a subset of the interrupts',
    async () => {
      const thread = threadId('seed-1by1');
      const { a, b, runId } = await seedStart(agentFor(thread, 'run the three tools'));

      // HttpAgent insists on answering every open interrupt of ITS last run, so the subset comes
      // from a second client on the thread (another tab, a reviewer's console).
      const reviewer = new HttpAgent({
        url: `${base}/v1/ag-ui`,
        headers,
        threadId: thread,
      });
      // t4–t5: A resolved, B left pending: A replays, the run interrupts again with B only.
      const second = await run(reviewer, {
        runId: 'ag-2',
        resume: [{ interruptId: a.id, status: 'resolved' }],
      });
      expect(
        second.events.filter((e) => e.type.startsWith('TOOL_CALL')).map((e) => e.toolCallId),
      ).toEqual([a.toolCallId]);
      expect(types(second.events).slice(-3)).toEqual([
        'STATE_SNAPSHOT',
        'MESSAGES_SNAPSHOT',
        'RUN_FINISHED',
      ]);
      expect(second.events.at(-1)).toMatchObject({ outcome: { type: 'interrupt' } });
      expect(reviewer.pendingInterrupts.map((i) => i.id)).toEqual([b.id]);
      // MESSAGES_SNAPSHOT gave the new client the whole conversation so far (A's result came
      // first, before the snapshot, so the client keeps it where it was).
      expect(reviewer.messages.map((m) => m.role).sort()).toEqual([
        'assistant',
        'tool',
        'tool',
        'user',
      ]);

      // t6–t7: B resolved: all terminal, the next step ends the run.
      const third = await run(reviewer, {
        runId: 'ag-3',
        resume: [{ interruptId: b.id, status: 'resolved' }],
      });
      expect(third.events.find((e) => e.type === 'TOOL_CALL_RESULT')).toMatchObject({
        toolCallId: b.toolCallId,
      });
      expect(third.events.at(-1)).toMatchObject({ outcome: { type: 'success' } });
      expect(reviewer.pendingInterrupts).toEqual([]);
      expect(reviewer.messages.filter((m) => m.role === 'tool')).toHaveLength(3);
      expect(reviewer.messages.at(-1)).toMatchObject({
        role: 'assistant',
        content: 'All 3 tools finished.',
      });
      for (const events of [second.events, third.events]) expect(batonRunOf(events)).toBe(runId);
      await expectSeedLog(runId, ['waiting', 'waiting', 'done']);
    },
    TIMEOUT,
  );

  it(
    'seed t0–t7, both interrupts in one resume (HttpAgent answers every open interrupt)',
    async () => {
      const agent = agentFor(threadId('seed-both'), 'run the three tools');
      const { a, b, runId } = await seedStart(agent);
      const second = await run(agent, {
        runId: 'ag-2',
        resume: [
          { interruptId: a.id, status: 'resolved' },
          { interruptId: b.id, status: 'resolved' },
        ],
      });
      const results = second.events.filter((e) => e.type === 'TOOL_CALL_RESULT');
      expect(results.map((e) => e.toolCallId).sort()).toEqual([a.toolCallId, b.toolCallId].sort());
      expect(second.events.filter((e) => e.type === 'TOOL_CALL_START')).toEqual([]);
      expect(second.events.at(-1)).toMatchObject({ outcome: { type: 'success' } });
      expect(agent.pendingInterrupts).toEqual([]);
      expect(agent.messages.filter((m) => m.role === 'tool')).toHaveLength(3);
      expect(agent.messages.at(-1)).toMatchObject({ content: 'All 3 tools finished.' });
      await expectSeedLog(runId, ['waiting', 'done']);
    },
    TIMEOUT,
  );

  it('auth, tenants and request errors', async () => {
    const thread = threadId('auth');
    const anonymous = await new ApiClient(base).post('/v1/ag-ui', {
      threadId: thread,
      runId: 'r',
      messages: [],
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ error: { code: 'unauthorized' } });

    // Tenant a's thread waits on an interrupt; tenant b's same thread id is a different thread.
    const owner = agentFor(thread, 'deploy please');
    const owned = await run(owner, { runId: 'ag-1', forwardedProps: { agent: 'assistant' } });
    const [interrupt] = owner.pendingInterrupts;
    const other = agentFor(thread, 'deploy please', KEYS.b);
    const refused = await run(other, {
      runId: 'ag-b',
      resume: [{ interruptId: interrupt!.id, status: 'resolved' }],
      forwardedProps: { agent: 'assistant' },
    });
    expect(refused.errors).toMatchObject([{ code: 'no_pending_interrupts' }]);

    // An unknown agent is refused before anything streams: standard JSON error.
    const unknown = await api.post('/v1/ag-ui', {
      threadId: threadId('unknown'),
      runId: 'r',
      messages: [{ id: 'u', role: 'user', content: 'hi' }],
      forwardedProps: { agent: 'nope' },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({ error: { code: 'unknown_agent' } });

    // Cleanup: cancel tenant a's waiting run (over the native API: same run).
    expect((await api.post(`/v1/runs/${batonRunOf(owned.events)}/cancel`)).status).toBe(202);
    // No stream is left subscribed once the responses ended.
    await until(
      () => c.apis[0]!.api.runtime.eventSubscriber().activeChannels === 0,
      'subscriptions to close',
    );
  });
});
