/**
 * Tracing in one process with an in-memory exporter: the span tree of a run from the HTTP
 * request through the queue to the step job, the model call and the tool job, with the GenAI
 * attributes, errors as span status, and the trace id in logs. Real Redis, real BullMQ, real
 * HTTP; the API and the worker share the process so one exporter sees both.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { ScriptedModel, defineTool, type AgentDefinition } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import { z } from 'zod';
import { createLogger, startTracing, systemClock, type TracingHandle } from '@baton/runtime';
import { shardQueueName, tracingActive } from '@baton/runtime/internal';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { waitFor } from '@baton/testing/worker-harness';

/** The run's queue: the one shard of the default task queue (K = 1). */
const Q = shardQueueName('default', 0, 1);

const exploding: AgentDefinition = {
  name: 'tracing-explodes',
  model: new ScriptedModel([
    { text: 'trying', toolCalls: [{ name: 'explode', arguments: {} }] },
    { text: 'it failed' },
  ]),
  tools: [
    defineTool({
      name: 'explode',
      description: 'always throws',
      inputSchema: z.object({}),
      execute: () => Promise.reject(new Error('boom from the tool')),
    }),
  ],
  executionMode: 'sequential',
};

const brokenModel: AgentDefinition = {
  name: 'tracing-broken-model',
  model: {
    id: 'acme.chat:broken-1',
    // eslint-disable-next-line require-yield -- a provider that fails before its first part
    async *stream() {
      throw new Error('provider refused the request');
    },
  },
  tools: [],
};

const byId = (spans: readonly ReadableSpan[]): Map<string, ReadableSpan> =>
  new Map(spans.map((s) => [s.spanContext().spanId, s]));

function parentOf(span: ReadableSpan, all: Map<string, ReadableSpan>): ReadableSpan | undefined {
  const id = span.parentSpanContext?.spanId;
  return id === undefined ? undefined : all.get(id);
}

/** The names from the span up to its root, nearest first. */
function chain(span: ReadableSpan, all: Map<string, ReadableSpan>): string[] {
  const names: string[] = [];
  for (let s: ReadableSpan | undefined = span; s; s = parentOf(s, all)) names.push(s.name);
  return names;
}

describe('tracing (in-memory exporter, real Redis and HTTP)', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: TracingHandle;
  let c: ApiCluster;
  let api: ApiClient;

  beforeAll(async () => {
    const started = await startTracing({ serviceName: 'baton-test', exporter, env: {} });
    if (!started) throw new Error('tracing did not start');
    tracing = started;
    c = await startApiCluster(inject('redisUrl'), [
      ...createDemoAgents(systemClock),
      exploding,
      brokenModel,
    ]);
    api = new ApiClient(c.apis[0]!.url, KEYS.a);
  });
  afterAll(async () => {
    await c?.stop();
    await tracing?.shutdown();
  });

  async function runToDone(agent: string, content: string): Promise<string> {
    const { runId } = await api.createRun(agent, content);
    await waitFor(
      async () => (await api.get<{ status?: string }>(`/v1/runs/${runId}`)).body.status === 'done',
      20_000,
      `run ${runId} to finish`,
    );
    return runId;
  }

  it('one trace from POST /v1/runs through enqueue, step job, model call and tool job', async () => {
    const runId = await runToDone('parallel-assistant', 'weather in Paris?');
    // Spans are exported as they end, parents after children: wait until both model calls and
    // the tool call are linked all the way up to the request.
    const spans = await waitFor(async () => {
      const found = exporter.getFinishedSpans();
      const index = byId(found);
      const leaves = found.filter(
        (s) =>
          s.attributes['baton.run.id'] === runId &&
          (s.name === 'chat scripted' || s.name === 'execute_tool get_weather'),
      );
      const linked = leaves.every((s) => chain(s, index).at(-1) === 'POST /v1/runs');
      return leaves.length === 3 && linked ? found : null;
    });
    const all = byId(spans);
    const http = spans.find(
      (s) =>
        s.kind === SpanKind.SERVER &&
        s.name === 'POST /v1/runs' &&
        s.attributes['http.response.status_code'] === 202,
    );
    expect(http).toBeDefined();
    const traceId = http!.spanContext().traceId;
    expect(http!.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/runs',
      'baton.tenant.id': 'tenant-a',
    });
    expect(http!.parentSpanContext).toBeUndefined();

    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    const enqueue = inTrace.find((s) => s.kind === SpanKind.PRODUCER && parentOf(s, all) === http);
    expect(enqueue?.name).toBe(`add ${Q}.start`);
    const firstStep = inTrace.find(
      (s) => s.kind === SpanKind.CONSUMER && parentOf(s, all) === enqueue,
    );
    expect(firstStep?.name).toBe(`process ${Q}`);
    expect(firstStep!.attributes).toMatchObject({
      'baton.run.id': runId,
      'baton.tenant.id': 'tenant-a',
      'baton.job.kind': 'step',
      'baton.job.reason': 'start',
    });

    const chats = inTrace.filter((s) => s.name === 'chat scripted');
    expect(chats).toHaveLength(2);
    const [first, second] = [...chats].sort(
      (a, b) => Number(a.attributes['baton.step']) - Number(b.attributes['baton.step']),
    );
    expect(first!.kind).toBe(SpanKind.CLIENT);
    expect(parentOf(first!, all)).toBe(firstStep);
    expect(first!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'baton',
      'gen_ai.system': 'baton',
      'gen_ai.request.model': 'scripted',
      'gen_ai.response.finish_reasons': ['tool-calls'],
      'gen_ai.usage.input_tokens': 10,
      'baton.run.id': runId,
      'baton.tenant.id': 'tenant-a',
      'baton.step': 1,
      'baton.tool_calls': 1,
    });
    expect(first!.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(second!.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);

    // Parallel mode: the tool call is a child job in the agent's tool queue.
    const tool = inTrace.find((s) => s.name === 'execute_tool get_weather');
    expect(tool?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.call.id': 'call_1_1',
      'baton.run.id': runId,
      'baton.tenant.id': 'tenant-a',
      'baton.tool.result': 'success',
    });
    expect(chain(tool!, all)).toEqual([
      'execute_tool get_weather',
      `process ${Q}`,
      `add ${Q}.tool:call_1_1`,
      `process ${Q}`,
      `add ${Q}.start`,
      'POST /v1/runs',
    ]);
    const toolJob = parentOf(tool!, all)!;
    expect(toolJob.attributes).toMatchObject({
      'baton.job.kind': 'tool',
      'baton.step': 1,
      'gen_ai.tool.call.id': 'call_1_1',
    });
    // The next round (carried by the re-entered step job, or enqueued as a new one) is still in
    // the request's trace, as is every span that names the run.
    expect(chain(second!, all).at(-1)).toBe('POST /v1/runs');
    expect(parentOf(second!, all)?.name).toBe(`process ${Q}`);
    const ofRun = spans.filter((s) => s.attributes['baton.run.id'] === runId);
    expect(ofRun.length).toBeGreaterThan(5);
    expect(new Set(ofRun.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));
    // BullMQ's way of parking a step job (waiting for its tool children) is no failure.
    expect(
      inTrace.filter((s) => s.status.code === SpanStatusCode.ERROR).map((s) => s.name),
    ).toEqual([]);
    // No credential reaches a span.
    const dump = JSON.stringify(inTrace.map((s) => s.attributes));
    expect(dump).not.toContain(KEYS.a);
    expect(dump.toLowerCase()).not.toContain('bearer');
  });

  it('errors are span statuses: a tool that throws, a model that fails; 4xx is not a server error', async () => {
    const exploded = await runToDone('tracing-explodes', 'go');
    const broken = await runToDone('tracing-broken-model', 'go');
    const bad = await api.post('/v1/runs', { agent: 'assistant' });
    expect(bad.status).toBe(400);
    const missing = await api.get('/v1/runs/no-such-run');
    expect(missing.status).toBe(404);

    const spans = await waitFor(async () => {
      const all = exporter.getFinishedSpans();
      const index = byId(all);
      const tool = all.find((s) => s.name === 'execute_tool explode');
      const done =
        tool !== undefined &&
        parentOf(tool, index) !== undefined &&
        all.some((s) => s.name === 'chat broken-1') &&
        all.filter((s) => s.name === 'chat scripted' && s.attributes['baton.run.id'] === exploded)
          .length === 2 &&
        all.some((s) => s.attributes['http.response.status_code'] === 400) &&
        all.some((s) => s.attributes['http.response.status_code'] === 404);
      return done ? all : null;
    });
    const tool = spans.find(
      (s) => s.name === 'execute_tool explode' && s.attributes['baton.run.id'] === exploded,
    )!;
    expect(tool.status).toMatchObject({
      code: SpanStatusCode.ERROR,
      message: 'boom from the tool',
    });
    expect(tool.events.map((e) => e.name)).toContain('exception');
    // A sequential run's next round, after the failed tool, is in the same trace.
    const ofRun = spans.filter((s) => s.attributes['baton.run.id'] === exploded);
    expect(new Set(ofRun.map((s) => s.spanContext().traceId)).size).toBe(1);
    // Sequential mode: the tool ran inline, inside the step job.
    expect(parentOf(tool, byId(spans))?.name).toBe(`process ${Q}`);

    const chat = spans.find(
      (s) => s.name === 'chat broken-1' && s.attributes['baton.run.id'] === broken,
    )!;
    expect(chat.attributes).toMatchObject({
      'gen_ai.provider.name': 'acme',
      'gen_ai.request.model': 'broken-1',
    });
    expect(chat.status).toMatchObject({
      code: SpanStatusCode.ERROR,
      message: 'provider refused the request',
    });

    const refused = spans.find(
      (s) => s.name === 'POST /v1/runs' && s.attributes['http.response.status_code'] === 400,
    )!;
    expect(refused.status.code).toBe(SpanStatusCode.UNSET);
    const notFound = spans.find(
      (s) => s.name === 'GET /v1/runs/:id' && s.attributes['http.response.status_code'] === 404,
    )!;
    expect(notFound.attributes['http.route']).toBe('/v1/runs/:id');
    expect(notFound.attributes['url.path']).toBe('/v1/runs/no-such-run');
  });

  it("continues the caller's trace from its traceparent header", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const reply = await api.post<{ runId: string }>(
      '/v1/runs',
      { agent: 'assistant', input: { messages: [{ role: 'user', content: 'weather?' }] } },
      { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    );
    expect(reply.status).toBe(202);
    const step = await waitFor(async () =>
      exporter
        .getFinishedSpans()
        .find(
          (s) => s.name === `process ${Q}` && s.attributes['baton.run.id'] === reply.body.runId,
        ),
    );
    expect(step.spanContext().traceId).toBe(traceId);
  });

  it('log lines written inside a span carry its trace_id and span_id', () => {
    expect(tracingActive()).toBe(true);
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger('baton-worker', 'info', sink);
    const ids = trace.getTracer('test').startActiveSpan('work', (span) => {
      logger.info('inside');
      span.end();
      return span.spanContext();
    });
    logger.info({ where: 'outside' }, 'outside');
    logger.info({ where: 'outside again' }, 'outside');
    const [inside, outside, again] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(inside).toMatchObject({ msg: 'inside', trace_id: ids.traceId, span_id: ids.spanId });
    expect(outside).not.toHaveProperty('trace_id');
    expect(again).toMatchObject({ where: 'outside again' });
  });
});
