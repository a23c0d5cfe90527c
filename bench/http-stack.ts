/**
 * The production-like topology the HTTP scenarios measure through: the API
 * (apps/api/src/main.ts, i.e. startApi) and a worker (apps/worker/src/main.ts) as child processes
 * on the isolated Redis, and this process as a node:http keep-alive client (JSON + SSE). Only
 * public surfaces are used (HTTP routes, SSE frames, /proc, INFO), so the scenarios keep working
 * whatever the step path does inside.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Agent, request, type IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { RunEvent } from '@baton/protocol';
import { SseParser } from '../test/support/sse-client.ts';
import {
  BenchError,
  envInt,
  processCpuSeconds,
  round,
  withTimeout,
  type BenchContext,
} from './lib.ts';

export const TENANT = 'bench';
export const API_MAIN = fileURLToPath(new URL('../apps/api/src/main.ts', import.meta.url));
export const WORKER_MAIN = fileURLToPath(new URL('../apps/worker/src/main.ts', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------------------------

export interface Child {
  readonly process: ChildProcess;
  /** The rest of the line that started with the ready marker (e.g. the API's URL). */
  readonly ready: string;
  stop(): Promise<void>;
}

export interface ChildOptions {
  /** Raise the open-files limit first (`ulimit -n`, through /bin/sh; up to the hard limit). */
  readonly fdLimit?: number;
  /** Called with every stdout line that is not the ready marker (default: logged). */
  readonly onLine?: (line: string) => void;
}

export async function startChild(
  ctx: BenchContext,
  label: string,
  script: string,
  env: Record<string, string>,
  readyMarker: string,
  timeoutMs: number,
  opts: ChildOptions = {},
): Promise<Child> {
  const child =
    opts.fdLimit === undefined
      ? spawn(process.execPath, [script], {
          env: { ...process.env, ...env },
          stdio: ['pipe', 'pipe', 'pipe'],
        })
      : spawn(
          '/bin/sh',
          [
            '-c',
            `ulimit -n ${opts.fdLimit} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$1"`,
            process.execPath,
            script,
          ],
          { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] },
        );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited.finally(() => clearTimeout(timer));
  };
  const ready = new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.startsWith(readyMarker)) resolve(line.slice(readyMarker.length).trim());
        else if (opts.onLine) opts.onLine(line);
        else if (line.trim() !== '') ctx.log(`${label}: ${line}`);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) =>
      ctx.log(`${label} stderr: ${chunk.toString('utf8').trimEnd()}`),
    );
    child.once('exit', (code, signal) =>
      reject(new BenchError(`${label} exited (code ${code}, signal ${signal}) before ready`)),
    );
  });
  try {
    const rest = await withTimeout(ready, timeoutMs, `${label} to print ${readyMarker.trim()}`);
    return { process: child, ready: rest, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Resident set size of another process in bytes, from /proc (Linux); undefined elsewhere. */
export async function processRssBytes(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

export async function childCpuSeconds(c: Child | undefined): Promise<number | undefined> {
  return c?.process.pid === undefined ? undefined : processCpuSeconds(c.process.pid);
}

/** (b - a) seconds as ms per unit, or undefined when /proc is not there. */
export function cpuMsPer(
  a: number | undefined,
  b: number | undefined,
  units: number,
): number | undefined {
  return a === undefined || b === undefined ? undefined : round(((b - a) * 1000) / units, 3);
}

// ---------------------------------------------------------------------------------------------
// The stack: one worker process + one API process
// ---------------------------------------------------------------------------------------------

export interface Stack {
  readonly client: Client;
  readonly api: Child;
  readonly worker: Child;
  readonly prefix: string;
  /** CPU seconds (user+sys) of the API and worker processes so far. */
  cpu(): Promise<{ api: number | undefined; worker: number | undefined }>;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** Redis key prefix label (a random suffix is added, so every stack has its own keys). */
  readonly label: string;
  readonly logLevel: string;
  readonly startTimeoutMs: number;
  readonly apiEnv?: Record<string, string>;
  readonly workerEnv?: Record<string, string>;
  readonly apiFdLimit?: number;
  /** keep-alive sockets of this process's client agent. */
  readonly maxSockets?: number;
}

export async function startStack(
  ctx: BenchContext,
  url: string,
  opts: StackOptions,
): Promise<Stack> {
  const prefix = `bench-${opts.label}-${randomBytes(3).toString('hex')}`;
  const key = `bench-${randomBytes(12).toString('hex')}`;
  const common = { REDIS_URL: url, BATON_PREFIX: prefix, LOG_LEVEL: opts.logLevel };
  const children: Child[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 256 });
  const stop = async (): Promise<void> => {
    agent.destroy();
    for (const c of children.reverse()) await c.stop();
  };
  try {
    ctx.log('starting worker process (apps/worker/src/main.ts, BATON_AGENTS=bench)');
    const worker = await startChild(
      ctx,
      'worker',
      WORKER_MAIN,
      {
        ...common,
        BATON_AGENTS: 'bench',
        RECONCILER: '0',
        WORKER_ID: `${prefix}-w0`,
        ...opts.workerEnv,
      },
      'READY ',
      opts.startTimeoutMs,
    );
    children.push(worker);
    ctx.log('starting API process (apps/api/src/main.ts)');
    const api = await startChild(
      ctx,
      'api',
      API_MAIN,
      {
        ...common,
        PORT: '0',
        HOST: '127.0.0.1',
        API_KEYS: `${TENANT}:${key}`,
        METRICS_PUBLIC: 'true',
        ...opts.apiEnv,
      },
      'LISTENING ',
      opts.startTimeoutMs,
      opts.apiFdLimit === undefined ? {} : { fdLimit: opts.apiFdLimit },
    );
    children.push(api);
    ctx.log(`api at ${api.ready}`);
    return {
      client: { base: new URL(api.ready), key, agent },
      api,
      worker,
      prefix,
      cpu: async () => ({ api: await childCpuSeconds(api), worker: await childCpuSeconds(worker) }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP client: node:http with keep-alive (the lightest honest client; sockets are reused)
// ---------------------------------------------------------------------------------------------

export interface Client {
  readonly base: URL;
  readonly key: string;
  readonly agent: Agent;
}

export interface HttpReply {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
}

export function httpJson(
  c: Client,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<HttpReply> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: c.base.hostname,
        port: c.base.port,
        path,
        method,
        agent: c.agent,
        timeout: timeoutMs,
        headers: {
          authorization: `Bearer ${c.key}`,
          ...(body === undefined
            ? {}
            : {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(payload),
              }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            parsed = undefined; // e.g. /metrics: the caller reads `text`
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, text });
        });
      },
    );
    req.on('timeout', () => req.destroy(new BenchError(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export async function postJson(
  c: Client,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  return httpJson(c, 'POST', path, body, timeoutMs);
}

/** POST that must answer `expected` (default 202); returns the parsed body. */
export async function mustPost<T>(
  c: Client,
  path: string,
  body: unknown,
  timeoutMs: number,
  expected = 202,
): Promise<T> {
  const reply = await httpJson(c, 'POST', path, body, timeoutMs);
  if (reply.status !== expected)
    throw new BenchError(`POST ${path}: HTTP ${reply.status} ${reply.text.slice(0, 300)}`);
  return reply.body as T;
}

export async function mustGet<T>(c: Client, path: string, timeoutMs: number): Promise<T> {
  const reply = await httpJson(c, 'GET', path, undefined, timeoutMs);
  if (reply.status !== 200)
    throw new BenchError(`GET ${path}: HTTP ${reply.status} ${reply.text.slice(0, 300)}`);
  return reply.body as T;
}

/** The value of one Prometheus sample in a /metrics text (first line matching name + labels). */
export function metricIn(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

/** GET /metrics as text (the stack sets METRICS_PUBLIC=true). */
export async function metricsText(c: Client, timeoutMs: number): Promise<string> {
  return (await httpJson(c, 'GET', '/metrics', undefined, timeoutMs)).text;
}

/** One Prometheus sample from GET /metrics. */
export async function metricValue(
  c: Client,
  name: string,
  labels: Record<string, string>,
  timeoutMs: number,
): Promise<number | undefined> {
  return metricIn(await metricsText(c, timeoutMs), name, labels);
}

/** Every sample of a metric from GET /metrics, as [labels text, value]. */
export async function metricSamples(
  c: Client,
  name: string,
  timeoutMs: number,
): Promise<[string, number][]> {
  const { text } = await httpJson(c, 'GET', '/metrics', undefined, timeoutMs);
  const out: [string, number][] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    out.push([line.slice(name.length + 1, close), Number(line.slice(close + 2))]);
  }
  return out;
}

export function runBody(agent: string, content: string, extra: Record<string, unknown> = {}) {
  return { agent, input: { messages: [{ role: 'user', content }] }, ...extra };
}

// ---------------------------------------------------------------------------------------------
// SSE
// ---------------------------------------------------------------------------------------------

export interface Received {
  readonly event: RunEvent;
  /** performance.now() when its frame was parsed. */
  readonly t: number;
}

export interface EventStream {
  /** performance.now() when the response headers arrived. */
  readonly headersAt: number;
  readonly received: Received[];
  /** Resolves on run.finished (with its performance.now()); rejects on an unexpected end. */
  readonly finished: Promise<number>;
  /** Resolves when the server has ended the response (socket back in the pool). */
  readonly ended: Promise<void>;
  /** Bytes of response body received so far. */
  bytes(): number;
  close(): void;
}

export interface EventStreamOptions {
  readonly after?: number;
  readonly until?: 'done' | 'suspended';
  readonly timeoutMs: number;
  /** Which run.finished resolves `finished` (default 'done': status done, natural end). */
  readonly expect?: 'done' | 'waiting' | 'any';
  /** Called on every parsed frame (after it is recorded). */
  readonly onEvent?: (r: Received) => void;
}

/** GET /v1/runs/:id/events; resolves once the response headers are in. */
export function openEvents(
  c: Client,
  runId: string,
  opts: EventStreamOptions,
): Promise<EventStream> {
  const query = `after=${opts.after ?? 0}${opts.until ? `&until=${opts.until}` : ''}`;
  return new Promise((resolveOpen, rejectOpen) => {
    const req = request({
      host: c.base.hostname,
      port: c.base.port,
      path: `/v1/runs/${encodeURIComponent(runId)}/events?${query}`,
      method: 'GET',
      agent: c.agent,
      headers: { authorization: `Bearer ${c.key}`, accept: 'text/event-stream' },
    });
    const timer = setTimeout(
      () =>
        req.destroy(new BenchError(`run ${runId}: no run.finished within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    req.on('error', (err) => {
      clearTimeout(timer);
      rejectOpen(err);
    });
    req.on('response', (res: IncomingMessage) => {
      const headersAt = performance.now();
      if (res.statusCode !== 200) {
        clearTimeout(timer);
        res.resume();
        rejectOpen(new BenchError(`GET events of ${runId}: HTTP ${res.statusCode}`));
        return;
      }
      const parser = new SseParser();
      const received: Received[] = [];
      let bytes = 0;
      let onFinished!: (t: number) => void;
      let onFail!: (err: Error) => void;
      const finished = new Promise<number>((resolve, reject) => {
        onFinished = resolve;
        onFail = reject;
      });
      const ended = new Promise<void>((resolve) => {
        res.on('end', () => {
          clearTimeout(timer);
          onFail(new BenchError(`run ${runId}: stream ended without run.finished`));
          resolve();
        });
        res.on('close', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      finished.catch(() => undefined); // observed by the caller
      res.on('error', (err) => onFail(err));
      req.on('error', (err) => onFail(err));
      res.setEncoding('utf8');
      const expect = opts.expect ?? 'done';
      res.on('data', (text: string) => {
        const t = performance.now();
        bytes += Buffer.byteLength(text);
        for (const m of parser.push(text)) {
          const event = JSON.parse(m.data) as RunEvent;
          const r = { event, t };
          received.push(r);
          opts.onEvent?.(r);
          if (event.type !== 'run.finished') continue;
          const natural = event.status === 'done' && event.termination.kind === 'natural_end';
          if (expect === 'any' || (expect === 'done' ? natural : event.status === 'waiting'))
            onFinished(t);
          else
            onFail(
              new BenchError(
                `run ${runId} finished with ${event.status} / ${JSON.stringify(event.termination)}`,
              ),
            );
        }
      });
      resolveOpen({
        headersAt,
        received,
        finished,
        ended,
        bytes: () => bytes,
        close: () => {
          clearTimeout(timer);
          req.destroy();
        },
      });
    });
    req.end();
  });
}

/** Epoch ms (fractional) of a performance.now() reading, to compare with events' `at`. */
export function epochOf(t: number): number {
  return performance.timeOrigin + t;
}

/** Knobs every HTTP scenario shares: child log level and start-up timeout. */
export function stackKnobs(): { logLevel: string; startTimeoutMs: number } {
  return {
    logLevel: process.env['BENCH_HTTP_LOG'] ?? process.env['BENCH_LATENCY_LOG'] ?? 'warn',
    startTimeoutMs: envInt('BENCH_TIMEOUT_MS', 120_000, 1000),
  };
}

export interface Followed {
  readonly runId: string;
  /** performance.now() before the POST. */
  readonly t0: number;
  /** performance.now() of the run.finished frame. */
  readonly finishedAt: number;
  readonly received: readonly Received[];
  /** SSE body bytes received. */
  readonly bytes: number;
}

/** POST /v1/runs with `body`, then follow its stream from the start until run.finished (done). */
export async function submitAndFollow(
  c: Client,
  body: unknown,
  timeoutMs: number,
): Promise<Followed> {
  const t0 = performance.now();
  const { runId } = await mustPost<{ runId: string }>(c, '/v1/runs', body, timeoutMs);
  const sse = await openEvents(c, runId, { timeoutMs });
  const finishedAt = await sse.finished;
  await sse.ended;
  return { runId, t0, finishedAt, received: sse.received, bytes: sse.bytes() };
}

/** Mean step.started → step.finished of one run, from the events' own `at` (ms). */
export function meanStepMs(received: readonly Received[]): number {
  const started = new Map<number, number>();
  const durations: number[] = [];
  for (const { event } of received) {
    if (event.type === 'step.started') started.set(event.step, event.at);
    if (event.type === 'step.finished') {
      const at = started.get(event.step);
      if (at !== undefined) durations.push(event.at - at);
    }
  }
  return durations.length === 0
    ? Number.NaN
    : durations.reduce((a, b) => a + b, 0) / durations.length;
}
