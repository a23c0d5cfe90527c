/**
 * Tracing across real processes: an API process and a worker process export to a real OTLP/HTTP
 * receiver started here, configured only by the standard OTEL_* variables, and the spans of one
 * run from both processes share one trace id. With the variables unset the same processes run a
 * run without loading a single module of the OpenTelemetry SDK (nor BullMQ's integration).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { ApiClient } from '@baton/testing/api-harness';
import { spawnApi, stopAllApiProcesses, type ApiProcess } from '@baton/testing/api-process';
import { startOtlpReceiver, type OtlpReceiver } from '@baton/testing/otlp-receiver';
import { testPrefix, waitFor } from '@baton/testing/worker-harness';
import { shardQueueName } from '@baton/runtime/internal';
import {
  spawnWorker,
  stopAllWorkerProcesses,
  type WorkerProcess,
} from '@baton/testing/worker-process';

/** The run's queue: the one shard of the default task queue (K = 1). */
const Q = shardQueueName('default', 0, 1);

const HOOK = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'packages',
  'testing',
  'src',
  'module-log-hook.ts',
);
const KEY = 'tracing-tenant-key-123';
const SERVER = 2;
const PRODUCER = 4;
const CONSUMER = 5;
const ERROR = 2;

/** What only a traced process loads: the SDK, its exporter, its context manager, BullMQ's glue. */
const SDK_MODULES = [
  '@opentelemetry/sdk-trace',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/resources',
  '@opentelemetry/core',
  'bullmq-otel',
  'packages/runtime/src/telemetry/tracing-sdk.ts',
];

interface Stack {
  readonly api: ApiProcess;
  readonly worker: WorkerProcess;
  readonly client: ApiClient;
  /** Stops both gracefully; then the module lists they loaded. */
  stop(): Promise<{ api: string[]; worker: string[] }>;
}

async function startStack(otel: Record<string, string>): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-modules-'));
  const prefix = testPrefix();
  const redisUrl = inject('redisUrl');
  const preload = [process.env['NODE_OPTIONS'], `--import=${HOOK}`].filter(Boolean).join(' ');
  const worker = await spawnWorker({
    redisUrl,
    prefix,
    agents: 'demo',
    probes: false,
    env: { ...otel, NODE_OPTIONS: preload, BATON_MODULE_LOG: join(dir, 'worker') },
  });
  const api = await spawnApi({
    redisUrl,
    prefix,
    keys: `tracing:${KEY}`,
    env: {
      ...otel,
      LOG_LEVEL: 'info',
      NODE_OPTIONS: preload,
      BATON_MODULE_LOG: join(dir, 'api'),
    },
  });
  return {
    api,
    worker,
    client: new ApiClient(api.url, KEY),
    stop: async () => {
      api.kill('SIGTERM');
      worker.kill('SIGTERM');
      const [a, w] = await Promise.all([api.exited, worker.waitForExit(20_000)]);
      expect(a.code, api.output()).toBe(0);
      expect(w.code, worker.output()).toBe(0);
      const read = (name: string): string[] =>
        readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean);
      return { api: read('api'), worker: read('worker') };
    },
  };
}

/** Creates a run and polls (gently: every request is a log line) until it is done. */
async function runToDone(client: ApiClient, content: string): Promise<string> {
  const { runId } = await client.createRun('parallel-assistant', content);
  await waitFor(
    async () => {
      await new Promise((r) => setTimeout(r, 100));
      return (await client.get<{ status?: string }>(`/v1/runs/${runId}`)).body.status === 'done';
    },
    30_000,
    `run ${runId} to finish`,
  );
  return runId;
}

function loaded(urls: readonly string[], module: string): boolean {
  return urls.some((u) => u.includes(`/node_modules/${module}/`) || u.endsWith(module));
}

describe('tracing across real processes', () => {
  let receiver: OtlpReceiver | undefined;
  afterEach(async () => {
    await stopAllApiProcesses();
    await stopAllWorkerProcesses();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('API and worker processes export one trace per run to an OTLP/HTTP receiver', async () => {
    receiver = await startOtlpReceiver();
    const stack = await startStack({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    const runId = await runToDone(stack.client, 'weather in Paris?');

    const r = receiver;
    const spans = await waitFor(
      async () => {
        const all = r.spans();
        const http = all.find(
          (s) => s.service === 'baton-api' && s.name === 'POST /v1/runs' && s.kind === SERVER,
        );
        if (!http) return null;
        const trace = all.filter((s) => s.traceId === http.traceId);
        const names = new Set(trace.map((s) => `${s.service} ${s.name}`));
        const complete = [
          `baton-api add ${Q}.start`,
          `baton-worker process ${Q}`,
          'baton-worker chat scripted',
          `baton-worker add ${Q}.tool:call_1_1`,
          `baton-worker process ${Q}`,
          'baton-worker execute_tool get_weather',
        ].every((n) => names.has(n));
        return complete && trace.filter((s) => s.name === 'chat scripted').length === 2
          ? { http, trace }
          : null;
      },
      20_000,
      'the run’s spans from both processes',
    );
    const { http, trace } = spans;
    expect(http.parentSpanId).toBe('');
    expect(http.attributes).toMatchObject({
      'http.route': '/v1/runs',
      'baton.tenant.id': 'tracing',
    });
    // Across the process boundary: the worker's consumer span is a child of the API's producer.
    const enqueue = trace.find((s) => s.kind === PRODUCER && s.parentSpanId === http.spanId)!;
    expect(enqueue.service).toBe('baton-api');
    const step = trace.find((s) => s.kind === CONSUMER && s.parentSpanId === enqueue.spanId)!;
    expect(step).toMatchObject({
      service: 'baton-worker',
      name: `process ${Q}`,
    });
    expect(step.attributes['baton.run.id']).toBe(runId);
    const chat = trace.find((s) => s.name === 'chat scripted' && s.parentSpanId === step.spanId)!;
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'scripted',
      'gen_ai.response.finish_reasons': ['tool-calls'],
      'gen_ai.usage.input_tokens': 10,
      'baton.step': 1,
    });
    const tool = trace.find((s) => s.name === 'execute_tool get_weather')!;
    expect(tool.attributes).toMatchObject({
      'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.call.id': 'call_1_1',
    });
    expect(trace.filter((s) => s.statusCode === ERROR)).toEqual([]);
    // Every span that names the run, from either process, is in the request's trace.
    const ofRun = r.spans().filter((s) => s.attributes['baton.run.id'] === runId);
    expect(new Set(ofRun.map((s) => s.traceId))).toEqual(new Set([http.traceId]));
    // Nothing secret was exported, in any span of any request.
    for (const text of r.bodies()) expect(text).not.toContain(KEY);

    // The API's request log line carries the trace id of its span.
    const lines = stack.api
      .output()
      .split('\n')
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
    const created = lines.find(
      (l) =>
        (l['req'] as { method?: string; url?: string } | undefined)?.method === 'POST' &&
        (l['req'] as { url?: string }).url === '/v1/runs',
    );
    expect(created, stack.api.output()).toMatchObject({ trace_id: http.traceId });

    const modules = await stack.stop();
    for (const m of [
      '@opentelemetry/sdk-trace',
      '@opentelemetry/exporter-trace-otlp-http',
      'bullmq-otel',
    ]) {
      expect(loaded(modules.api, m), m).toBe(true);
      expect(loaded(modules.worker, m), m).toBe(true);
    }
  });

  it('an unreachable collector costs spans, not runs: the run finishes and both processes stop cleanly', async () => {
    const closed = await startOtlpReceiver();
    await closed.close(); // a port nobody listens on any more
    const stack = await startStack({
      OTEL_EXPORTER_OTLP_ENDPOINT: closed.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    await runToDone(stack.client, 'weather in Paris?');
    const modules = await stack.stop(); // exit code 0 for both, checked inside
    expect(loaded(modules.worker, '@opentelemetry/exporter-trace-otlp-http')).toBe(true);
  });

  it('with no OTEL_* variables a run loads no OpenTelemetry SDK module in either process', async () => {
    const stack = await startStack({
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      OTEL_TRACES_EXPORTER: '',
    });
    await runToDone(stack.client, 'weather in Paris?');
    const modules = await stack.stop();
    // The hook saw the processes' own code, so an empty SDK list means something.
    expect(modules.api.some((u) => u.endsWith('apps/api/src/app.ts'))).toBe(true);
    expect(modules.worker.some((u) => u.endsWith('apps/worker/src/tracing.ts'))).toBe(true);
    for (const m of SDK_MODULES) {
      expect(loaded(modules.api, m), `api loaded ${m}`).toBe(false);
      expect(loaded(modules.worker, m), `worker loaded ${m}`).toBe(false);
    }
    // Nor node-postgres: without ARCHIVE_URL there is no archive to load it for.
    expect(loaded(modules.api, 'pg'), 'api loaded pg').toBe(false);
    expect(loaded(modules.worker, 'pg'), 'worker loaded pg').toBe(false);
  });

  it('a tracing variable it cannot honour stops either process with one line naming it', async () => {
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    const bad = { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' };
    await expect(spawnApi({ redisUrl, prefix, keys: `t:${KEY}`, env: bad })).rejects.toThrow(
      /exited before listening \(1\)[\s\S]*baton-api: OTEL_TRACES_SAMPLER="sometimes" is not supported/,
    );
    await expect(
      spawnWorker({
        redisUrl,
        prefix,
        probes: false,
        env: {
          ...bad,
          OTEL_TRACES_SAMPLER: 'always_on',
          OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        },
      }),
    ).rejects.toThrow(
      /code 1[\s\S]*baton-worker: OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318" is not an http\(s\) URL/,
    );
  });
});
