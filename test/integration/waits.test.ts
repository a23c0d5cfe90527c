import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { ScriptedModel, defineTool, toolResult, waitForEventTool } from '@baton/core';
import { z } from 'zod';
import { createDemoAgents } from '@baton/core/testing';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import type { AgentDefinition } from '@baton/core';
import type { RunEvent, RunView, WaitpointCreated } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { BatonClient } from '@baton/client';
import { createCli } from '@baton/cli';
import { PassThrough } from 'node:stream';
import {
  ApiClient,
  KEYS,
  startApiCluster,
  type ApiCluster,
  type Reply,
} from '@baton/testing/api-harness';

/** Waits for an event named by its user message `name key timeoutMs`, then answers its result. */
function waiterAgent(): AgentDefinition {
  return {
    name: 'waiter',
    model: new ScriptedModel((request) => {
      const last = request.messages.at(-1);
      if (last?.role === 'user') {
        const [name, key, ms] = String(last.content).split(' ');
        return {
          text: 'waiting',
          toolCalls: [
            {
              name: 'baton_wait_for_event',
              arguments: { name: name!, key: key!, timeoutMs: Number(ms) },
            },
          ],
        };
      }
      return { text: `result: ${JSON.stringify(last?.content ?? null)}` };
    }),
    tools: [waitForEventTool()],
    stopConditions: [{ type: 'max_rounds', rounds: 4 }],
  };
}

/** URLs the `ci` agent's tool handed out; `release` lets an early one's tool return. */
const handed: { url: string; release?: () => void }[] = [];

/** A tool that creates a waitpoint for its call and waits on it (`early`: returns when released). */
function ciAgent(): AgentDefinition {
  const runCi = defineTool({
    name: 'run_ci',
    description: 'starts a CI job that reports back through a waitpoint URL',
    inputSchema: z.object({ early: z.boolean() }),
    resumeMode: 'use_decision_as_tool_result',
    execute: async ({ early }, ctx) => {
      const wp = await ctx.waitpoint!({ expiresInMs: 60_000 });
      if (early) await new Promise<void>((release) => handed.push({ url: wp.url, release }));
      else handed.push({ url: wp.url });
      return toolResult.pending({
        reason: 'input',
        message: 'waiting for CI',
        resumeMode: 'use_decision_as_tool_result',
        responseSchema: { type: 'object', properties: { passed: { type: 'boolean' } } },
        waitFor: wp.waitFor,
      });
    },
  });
  return {
    name: 'ci',
    model: new ScriptedModel((request) => {
      const last = request.messages.at(-1);
      if (last?.role === 'user')
        return {
          text: 'starting CI',
          toolCalls: [{ name: 'run_ci', arguments: { early: last.content === 'early' } }],
        };
      return { text: `CI: ${JSON.stringify(last?.content ?? null)}` };
    }),
    tools: [runCi],
    stopConditions: [{ type: 'max_rounds', rounds: 4 }],
  };
}

/** `baton args…` in-process; its stdout. */
async function baton(base: string, args: readonly string[]): Promise<string> {
  const stdout = new PassThrough();
  let out = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await createCli({
    stdout,
    stderr: new PassThrough(),
    stdin: new PassThrough(),
    env: { BATON_URL: base, BATON_API_KEY: KEYS.a, NO_COLOR: '1' },
    signal: new AbortController().signal,
  }).run(args);
  if (code !== 0) throw new Error(`baton ${args.join(' ')} exited ${String(code)}: ${out}`);
  return out;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('waitpoints and events', () => {
  let c: ApiCluster;
  let a: ApiClient;
  let b: ApiClient;
  let logged: RunningApi;
  let anon: ApiClient;
  let redis: Redis;
  const lines: string[] = [];

  beforeAll(async () => {
    c = await startApiCluster(
      inject('redisUrl'),
      [...createDemoAgents(systemClock), waiterAgent(), ciAgent()],
      {
        apis: 2,
        // Long: timeouts must not depend on the reconciler (the timer index fires them).
        shared: { RECONCILE_INTERVAL_MS: '600000' },
      },
    );
    // A third instance logging every request at info, to scan for tokens.
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const config = loadApiConfig({
      REDIS_URL: inject('redisUrl'),
      BATON_PREFIX: c.h.prefix,
      API_KEYS: `tenant-a:${KEYS.a}`,
      LOG_LEVEL: 'info',
      METRICS_PUBLIC: 'true',
      WAITPOINT_RATE_LIMIT_PER_MINUTE: '40',
    });
    logged = await startApi({
      config,
      port: 0,
      host: '127.0.0.1',
      logger: pino({ level: 'info' }, sink),
    });
    a = new ApiClient(c.apis[0]!.url, KEYS.a);
    b = new ApiClient(c.apis[1]!.url, KEYS.b);
    anon = new ApiClient(logged.url);
    redis = new Redis(inject('redisUrl'));
  });
  afterAll(async () => {
    redis.disconnect();
    await logged.close();
    await c.stop();
  });

  async function suspendedDeploy(): Promise<{ runId: string; callId: string }> {
    const { runId } = await a.createRun('assistant');
    await a.stream(`/v1/runs/${runId}/events?until=suspended`);
    const view = (await a.get<RunView>(`/v1/runs/${runId}`)).body;
    return { runId, callId: view.await!.calls[0]!.toolCallId };
  }

  it('completes a call without an API key; a repeat answers the first outcome; 404, 422, 413', async () => {
    const { runId, callId } = await suspendedDeploy();
    const created = await a.post<WaitpointCreated>(`/v1/runs/${runId}/calls/${callId}/waitpoint`);
    expect(created.status).toBe(201);
    const { url, token } = created.body;
    expect(url).toBe(`/w/${token}`);
    expect(created.body.responseSchema).toBeDefined();
    // The run's view shows what the call now waits for.
    const waiting = (await a.get<RunView>(`/v1/runs/${runId}`)).body;
    expect(waiting.await?.calls[0]?.waitFor).toEqual({
      kind: 'waitpoint',
      expiresAt: created.body.expiresAt,
    });

    // Another tenant cannot make one for this run.
    expect((await b.post(`/v1/runs/${runId}/calls/${callId}/waitpoint`)).status).toBe(404);
    // A wrong token, of the right shape or not.
    const wrong = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect((await anon.post(`/w/${wrong}`, { comment: 'x' })).status).toBe(404);
    expect((await anon.post(`/w/nope`, { comment: 'x' })).status).toBe(404);
    // The body fails the call's responseSchema: 422, nothing used up.
    const bad = await anon.post<{ error: { code: string } }>(url, { comment: 5 });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('payload_invalid');
    // Over the size limit: 413.
    const big = await anon.post(url, { comment: 'x'.repeat(70 * 1024) });
    expect(big.status).toBe(413);

    const first = await anon.post<{ decisionId: string; repeat: boolean }>(
      `/v1/waitpoints/${token}`,
      { comment: 'ship it' },
    );
    expect(first.status).toBe(202);
    expect(first.body.repeat).toBe(false);
    const again = await anon.post<{ decisionId: string; repeat: boolean }>(url, {
      comment: 'something else',
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ repeat: true, decisionId: first.body.decisionId });

    const done = await a.stream(`/v1/runs/${runId}/events`);
    const events = done.messages.map((m) => JSON.parse(m.data) as RunEvent);
    const applied = events.filter((e) => e.type === 'decision.applied');
    expect(applied).toHaveLength(1);
    expect(applied[0]).toMatchObject({
      decision: { source: 'waitpoint', payload: { comment: 'ship it' } },
    });
    expect(events.at(-1)?.type).toBe('run.finished');

    // An expired waitpoint is a wrong one.
    const other = await suspendedDeploy();
    const short = await new BatonClient({ baseUrl: a.base, apiKey: KEYS.a }).waitpoints.create(
      other.runId,
      other.callId,
      { expiresInMs: 1 },
    );
    await new Promise((r) => setTimeout(r, 20));
    expect((await anon.post(short.url, { comment: 'late' })).status).toBe(404);
    // The client completes one by its URL, without a key.
    const fresh = await new BatonClient({ baseUrl: a.base, apiKey: KEYS.a }).waitpoints.create(
      other.runId,
      other.callId,
    );
    const viaClient = await new BatonClient({ baseUrl: logged.url }).waitpoints.complete(
      `${logged.url}${fresh.url}`,
      { comment: 'by client' },
    );
    expect(viaClient).toMatchObject({ runId: other.runId, repeat: false });

    // No line of the logging instance carries a token (it served every waitpoint request).
    expect(lines.length).toBeGreaterThan(5);
    for (const t of [token, wrong, short.token, fresh.token])
      expect(lines.filter((l) => l.includes(t))).toEqual([]);
    expect(lines.some((l) => l.includes('/w/[redacted]'))).toBe(true);
    // Nor any metric label (routes are labelled by their pattern).
    const metrics = await anon.get<string>('/metrics');
    expect(metrics.body).toContain('/w/:token');
    for (const t of [token, short.token, fresh.token]) expect(metrics.body).not.toContain(t);
  });

  it('an event resumes exactly the runs of its tenant waiting for its name and key', async () => {
    const start = async (client: ApiClient, text: string): Promise<string> =>
      (await client.createRun('waiter', text)).runId;
    const k1 = [await start(a, 'paid order-1 60000'), await start(a, 'paid order-1 60000')];
    const k2 = await start(a, 'paid order-2 60000');
    const other = await start(b, 'paid order-1 60000');
    const waiting = async (n: number, tenant: string, key: string): Promise<void> => {
      await until(`${n} waiters of ${key}`, async () =>
        (await redis.scard(`${c.h.prefix}:{evw:${tenant}:paid:${key}}`)) === n ? true : undefined,
      );
    };
    await waiting(2, 'tenant-a', 'order-1');
    await waiting(1, 'tenant-a', 'order-2');
    await waiting(1, 'tenant-b', 'order-1');
    const view = (await a.get<RunView>(`/v1/runs/${k2}`)).body;
    expect(view.await?.calls[0]?.waitFor).toMatchObject({
      kind: 'event',
      name: 'paid',
      key: 'order-2',
    });
    expect(view.await?.calls[0]?.waitFor?.expiresAt).toBeGreaterThan(Date.now());

    const sent = await a.post<{ resumed: number; runs: string[] }>('/v1/events', {
      name: 'paid',
      key: 'order-1',
      data: { amount: 42 },
    });
    expect(sent.status).toBe(200);
    expect(sent.body.resumed).toBe(2);
    expect([...sent.body.runs].sort()).toEqual([...k1].sort());
    // Sent again (from the other instance): nobody is waiting any more.
    const twice = await new BatonClient({ baseUrl: c.apis[1]!.url, apiKey: KEYS.a }).events.send({
      name: 'paid',
      key: 'order-1',
    });
    expect(twice.resumed).toBe(0);
    for (const runId of k1) {
      const events = (await a.stream(`/v1/runs/${runId}/events`)).messages.map(
        (m) => JSON.parse(m.data) as RunEvent,
      );
      expect(events.filter((e) => e.type === 'decision.applied')).toHaveLength(1);
      expect(events.find((e) => e.type === 'decision.applied')).toMatchObject({
        decision: { source: 'event', payload: { event: { key: 'order-1', data: { amount: 42 } } } },
      });
    }
    // Tenant b's waiter and order-2's are still waiting.
    expect((await b.get<RunView>(`/v1/runs/${other}`)).body.status).toBe('waiting');
    expect((await a.get<RunView>(`/v1/runs/${k2}`)).body.status).toBe('waiting');
    expect(await baton(a.base, ['runs', 'get', k2])).toMatch(/event paid for order-2, until /);
    // The CLI sends one too.
    const cli = JSON.parse(
      await baton(a.base, ['events', 'send', 'paid', 'order-2', '--data', '{"x":1}', '--json']),
    ) as { resumed: number; runs: string[] };
    expect(cli).toEqual({ resumed: 1, runs: [k2] });
    await b.post(`/v1/runs/${other}/cancel`);
  });

  it('a wait with no event times out once, through the timer index within ~1 s', async () => {
    const { runId } = await a.createRun('waiter', 'never late-1 200');
    const done = await a.stream(`/v1/runs/${runId}/events`);
    const events = done.messages.map((m) => JSON.parse(m.data) as RunEvent);
    const applied = events.filter((e) => e.type === 'decision.applied');
    expect(applied).toHaveLength(1);
    expect(applied[0]).toMatchObject({
      decision: { source: 'timeout', payload: { timedOut: true } },
    });
    const suspended = events.find((e) => e.type === 'tool_call.suspended');
    const expired = events.find((e) => e.type === 'tool_call.deadline_expired');
    if (suspended?.type !== 'tool_call.suspended' || expired?.type !== 'tool_call.deadline_expired')
      throw new Error('the wait was not suspended and expired');
    // The deadline is the suspension's own clock reading + 200 ms (taken before its commit, so
    // the event's `at` may be a little later); it fires at or after it, late by the timer
    // sweep, not by RECONCILE_INTERVAL_MS (10 min here).
    expect(expired.deadlineAt).toBe(suspended.ticket.deadline?.at);
    expect(expired.deadlineAt).toBeGreaterThanOrEqual(suspended.at + 200 - 1_000);
    console.log(`waits timeout lateness: ${String(expired.at - expired.deadlineAt)} ms`);
    expect(expired.at).toBeGreaterThanOrEqual(expired.deadlineAt);
    expect(expired.at - expired.deadlineAt).toBeLessThan(1_000);
    expect(events.at(-1)?.type).toBe('run.finished');
    // The old ZSET is no longer written.
    expect(await redis.exists(`${c.h.prefix}:waits:timeouts`)).toBe(0);
    // The event arriving afterwards resumes nothing.
    expect(
      (await a.post<{ resumed: number }>('/v1/events', { name: 'never', key: 'late-1' })).body
        .resumed,
    ).toBe(0);
  });

  it("the reconciler drains the previous release's timeouts and re-registers lost waiters", async () => {
    const waiting = async (message: string): Promise<{ runId: string; callId: string }> => {
      const { runId } = await a.createRun('waiter', message);
      await a.stream(`/v1/runs/${runId}/events?until=suspended`);
      const view = (await a.get<RunView>(`/v1/runs/${runId}`)).body;
      return { runId, callId: view.await!.calls[0]!.toolCallId };
    };
    // A timeout the previous release wrote to p:waits:timeouts (its calls had no deadline).
    const legacy = await waiting('legacy order-9 600000');
    await redis.zadd(
      `${c.h.prefix}:waits:timeouts`,
      Date.now() - 1,
      JSON.stringify([legacy.runId, legacy.callId, 'event']),
    );
    // A waiter whose registration was lost (its worker died after the commit).
    const lost = await waiting('shipped order-10 600000');
    await redis.del(`${c.h.prefix}:{evw:tenant-a:shipped:order-10}`);
    expect(
      (await a.post<{ resumed: number }>('/v1/events', { name: 'shipped', key: 'order-10' })).body
        .resumed,
    ).toBe(0);

    await c.h.workers[0]!.reconcile();
    const legacyEvents = (await a.stream(`/v1/runs/${legacy.runId}/events`)).messages.map(
      (m) => JSON.parse(m.data) as RunEvent,
    );
    const legacyApplied = legacyEvents.filter((e) => e.type === 'decision.applied');
    expect(legacyApplied).toHaveLength(1);
    expect(legacyApplied[0]).toMatchObject({
      decision: { source: 'timeout', decisionId: `timeout-${legacy.callId}` },
    });
    expect(await redis.exists(`${c.h.prefix}:waits:timeouts`)).toBe(0);
    const sent = await a.post<{ resumed: number }>('/v1/events', {
      name: 'shipped',
      key: 'order-10',
    });
    expect(sent.body.resumed).toBe(1);
    const lostEvents = (await a.stream(`/v1/runs/${lost.runId}/events`)).messages.map(
      (m) => JSON.parse(m.data) as RunEvent,
    );
    expect(lostEvents.at(-1)?.type).toBe('run.finished');
  });

  it("a tool's own waitpoint completes its call, even when the completion comes first", async () => {
    const finished = async (runId: string): Promise<RunEvent[]> =>
      (await a.stream(`/v1/runs/${runId}/events`)).messages.map(
        (m) => JSON.parse(m.data) as RunEvent,
      );
    const { runId } = await a.createRun('ci', 'late');
    await a.stream(`/v1/runs/${runId}/events?until=suspended`);
    const view = (await a.get<RunView>(`/v1/runs/${runId}`)).body;
    expect(view.await?.calls[0]?.waitFor).toMatchObject({ kind: 'waitpoint' });
    const late = handed.shift()!;
    expect((await anon.post(late.url, { passed: true })).status).toBe(202);
    const events = await finished(runId);
    expect(events.find((e) => e.type === 'decision.applied')).toMatchObject({
      decision: { source: 'waitpoint', payload: { passed: true } },
    });
    expect(events.at(-1)?.type).toBe('run.finished');

    // Completed while the tool still runs: kept, and applied once the call suspends.
    const early = await a.createRun('ci', 'early');
    const handedEarly = await until('the early URL', () => Promise.resolve(handed.shift()));
    expect((await anon.post(handedEarly.url, { passed: false })).status).toBe(202);
    handedEarly.release!();
    const earlyEvents = await finished(early.runId);
    expect(earlyEvents.filter((e) => e.type === 'decision.applied')).toHaveLength(1);
    expect(earlyEvents.find((e) => e.type === 'decision.applied')).toMatchObject({
      decision: { source: 'waitpoint', payload: { passed: false } },
    });
  });

  // Last: it spends this client's waitpoint budget.
  it('waitpoint URLs are rate limited per client (429 with Retry-After)', async () => {
    let limited: Reply<{ error: { code: string } }> | undefined;
    for (let i = 0; i < 45 && !limited; i += 1) {
      const r = await anon.post<{ error: { code: string } }>('/w/nope', {});
      if (r.status === 429) limited = r;
      else expect(r.status).toBe(404);
    }
    expect(limited?.status).toBe(429);
    expect(limited?.body).toMatchObject({ error: { code: 'rate_limited' } });
    expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
