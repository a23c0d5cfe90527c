import type { AgentDefinition } from '@baton/core';
import { hashKey, loadApiConfig, startApi, type ApiConfig, type RunningApi } from '@baton/api';
import type { RunEvent } from '@baton/protocol';
import { readStream, type StreamOptions, type StreamResult } from './sse-client.ts';
import { silentLogger, startHarness, type Harness } from './worker-harness.ts';

export const KEYS = {
  a: 'tenant-a-secret-key',
  b: 'tenant-b-secret-key',
  admin: 'admin-secret-key-1',
} as const;

export interface ApiCluster {
  readonly h: Harness;
  readonly apis: RunningApi[];
  readonly config: ApiConfig;
  stop(): Promise<void>;
}

/** In-process workers plus `apis` API instances on their own ports, all on one Redis prefix. */
export async function startApiCluster(
  redisUrl: string,
  agents: readonly AgentDefinition[],
  opts: {
    apis?: number;
    workers?: number;
    env?: Record<string, string>;
    /** Settings the API and the workers must agree on (BATON_FAIRNESS, the archive's, retention). */
    shared?: Record<string, string>;
  } = {},
): Promise<ApiCluster> {
  const h = await startHarness(redisUrl, agents, {
    workers: opts.workers ?? 1,
    ...(opts.shared ? { overrides: opts.shared } : {}),
  });
  const config = loadApiConfig({
    REDIS_URL: redisUrl,
    BATON_PREFIX: h.prefix,
    // tenant-b's key is configured pre-hashed, like a production secret would be
    API_KEYS: `tenant-a:${KEYS.a},tenant-b:sha256:${hashKey(KEYS.b)}`,
    ADMIN_KEYS: `ops:${KEYS.admin}`,
    LOG_LEVEL: 'silent',
    SSE_HEARTBEAT_MS: '250',
    ...opts.shared,
    ...opts.env,
  });
  const apis: RunningApi[] = [];
  for (let i = 0; i < (opts.apis ?? 1); i += 1)
    apis.push(await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger }));
  return {
    h,
    apis,
    config,
    stop: async () => {
      await Promise.all(apis.map((a) => a.close()));
      await h.stop();
    },
  };
}

export interface Reply<T = unknown> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

/** A JSON client for one API instance and one key. */
export class ApiClient {
  readonly base: string;
  readonly key: string | undefined;

  constructor(base: string, key?: string) {
    this.base = base;
    this.key = key;
  }

  withKey(key: string | undefined): ApiClient {
    return new ApiClient(this.base, key);
  }

  authHeaders(): Record<string, string> {
    return this.key === undefined ? {} : { authorization: `Bearer ${this.key}` };
  }

  async request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply<T>> {
    const init: RequestInit = {
      method,
      headers: { ...this.authHeaders(), ...headers },
      signal: AbortSignal.timeout(10_000),
    };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${this.base}${path}`, init);
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text !== '')
      parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed as T };
  }

  get<T = unknown>(path: string, headers?: Record<string, string>): Promise<Reply<T>> {
    return this.request<T>('GET', path, undefined, headers);
  }

  post<T = unknown>(
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Reply<T>> {
    return this.request<T>('POST', path, body, headers);
  }

  stream(path: string, opts: StreamOptions = {}): Promise<StreamResult> {
    return readStream(`${this.base}${path}`, {
      ...opts,
      headers: { ...this.authHeaders(), ...opts.headers },
    });
  }

  async createRun(
    agent: string,
    content = 'deploy please',
    extra: Record<string, unknown> = {},
  ): Promise<{ runId: string; threadId: string }> {
    const r = await this.post('/v1/runs', {
      agent,
      input: { messages: [{ role: 'user', content }] },
      ...extra,
    });
    if (r.status !== 202)
      throw new Error(`createRun ${agent}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as { runId: string; threadId: string };
  }
}

export function eventsOf(result: StreamResult): RunEvent[] {
  return result.messages.map((m) => JSON.parse(m.data) as RunEvent);
}

/** Every seq from 1 to the last exactly once, in order. */
export function expectGapless(events: readonly RunEvent[]): void {
  const seqs = events.map((e) => e.seq);
  const expected = seqs.map((_, i) => i + 1);
  if (JSON.stringify(seqs) !== JSON.stringify(expected))
    throw new Error(`events are not 1..${seqs.length} exactly once: ${seqs.join(',')}`);
}
