/**
 * The production-like topology the HTTP scenarios measure through: the API
 * (apps/api/src/main.ts, i.e. startApi) and a worker (apps/worker/src/main.ts) as child processes
 * on the isolated Redis, and this process as a node:http keep-alive client (JSON + SSE). Only
 * public surfaces are used (HTTP routes, SSE frames, /proc, INFO), so the scenarios keep working
 * whatever the step path does inside. The pieces live in child-process.ts, http-client.ts and
 * http-sse.ts; this module re-exports them so a scenario imports one place.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { BENCH_AGENTS_MODULE } from '@baton/testing/bench-agents';
import {
  childCpuSeconds,
  processGroup,
  startChild,
  workerNodeOptions,
  type Child,
} from './child-process.ts';
import type { Client } from './http-client.ts';
import { envInt, type BenchContext } from './lib.ts';

export * from './child-process.ts';
export * from './http-client.ts';
export * from './http-sse.ts';

export const TENANT = 'bench';
const API_MAIN = fileURLToPath(new URL('../apps/api/src/main.ts', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('../apps/worker/src/main.ts', import.meta.url));

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
  const { agent, children, stop } = processGroup(opts.maxSockets);
  try {
    ctx.log(
      'starting worker process (apps/worker/src/main.ts, BATON_AGENTS=<bench agents module>)',
    );
    const worker = await startChild(
      ctx,
      'worker',
      WORKER_MAIN,
      {
        ...common,
        BATON_AGENTS: BENCH_AGENTS_MODULE,
        RECONCILER: '0',
        WORKER_ID: `${prefix}-w0`,
        ...workerNodeOptions(),
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
        ...apiNodeOptions(),
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

/**
 * BENCH_API_NODE_OPTIONS becomes the API child's NODE_OPTIONS (only its own), e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/apiprof` to profile where the API's CPU per run goes; the
 * profile is written when the child exits on the bench's SIGTERM.
 */
function apiNodeOptions(): Record<string, string> {
  const value = process.env['BENCH_API_NODE_OPTIONS'];
  return value === undefined || value === '' ? {} : { NODE_OPTIONS: value };
}

/** Knobs every HTTP scenario shares: child log level and start-up timeout. */
export function stackKnobs(): { logLevel: string; startTimeoutMs: number } {
  return {
    logLevel: process.env['BENCH_HTTP_LOG'] ?? process.env['BENCH_LATENCY_LOG'] ?? 'warn',
    startTimeoutMs: envInt('BENCH_TIMEOUT_MS', 120_000, 1000),
  };
}
