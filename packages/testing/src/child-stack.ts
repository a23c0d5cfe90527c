/**
 * Test fixture for child runs (agent-as-tool): worker PROCESSES running the `children` agent set
 * and one in-process API, on a private prefix of the test Redis, with one tenant key.
 */
import { hashKey, loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { BatonRuntime } from '@baton/runtime';
import type { Checkpoint, RunEvent } from '@baton/protocol';
import { ApiClient } from './api-harness.ts';
import { silentLogger, testConfig, testPrefix, waitFor } from './worker-harness.ts';
import { spawnWorker, type WorkerProcess } from './worker-process.ts';

const CHILD_TENANT = 'tree';

export interface ChildStack {
  readonly prefix: string;
  readonly redisUrl: string;
  readonly api: RunningApi;
  readonly client: ApiClient;
  /** The same API with another tenant's key. */
  readonly stranger: ApiClient;
  /** Direct access to the stores (reads; and the service, as the API uses it). */
  readonly rt: BatonRuntime;
  spawn(opts?: {
    pause?: Record<string, number>;
    env?: Record<string, string>;
  }): Promise<WorkerProcess>;
  load(runId: string): Promise<Checkpoint | null>;
  waitDone(runId: string, timeoutMs?: number): Promise<Checkpoint>;
  waitFor(runId: string, pred: (cp: Checkpoint) => boolean, what: string): Promise<Checkpoint>;
  events(runId: string): Promise<RunEvent[]>;
  /** Every run of the tenant whose identity names `parentRunId` as its parent. */
  childrenOf(parentRunId: string): Promise<Checkpoint[]>;
  stop(): Promise<void>;
}

export async function startChildStack(
  redisUrl: string,
  apiEnv: Record<string, string> = {},
): Promise<ChildStack> {
  const prefix = testPrefix();
  const key = `tree-key-${prefix}`;
  const config = loadApiConfig({
    REDIS_URL: redisUrl,
    BATON_PREFIX: prefix,
    API_KEYS: `${CHILD_TENANT}:sha256:${hashKey(key)},other:sha256:${hashKey(`${key}-other`)}`,
    LOG_LEVEL: 'silent',
    SSE_HEARTBEAT_MS: '250',
    ...apiEnv,
  });
  const api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  const rt = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
  const load = async (runId: string): Promise<Checkpoint | null> =>
    (await rt.store.load(runId))?.checkpoint ?? null;
  const waitUntil = (
    runId: string,
    pred: (cp: Checkpoint) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<Checkpoint> =>
    waitFor(
      async () => {
        const cp = await load(runId);
        return cp && pred(cp) ? cp : null;
      },
      timeoutMs,
      `run ${runId} ${what}`,
    );
  return {
    prefix,
    redisUrl,
    api,
    rt,
    client: new ApiClient(api.url, key),
    stranger: new ApiClient(api.url, `${key}-other`),
    spawn: (opts = {}) =>
      spawnWorker({
        redisUrl,
        prefix,
        agents: 'children',
        ...(opts.pause ? { pause: opts.pause } : {}),
        ...(opts.env ? { env: opts.env } : {}),
      }),
    load,
    waitDone: (runId, timeoutMs) =>
      waitUntil(runId, (cp) => cp.status === 'done', 'to be done', timeoutMs),
    waitFor: (runId, pred, what) => waitUntil(runId, pred, what),
    events: (runId) => rt.store.readEvents(runId),
    childrenOf: async (parentRunId) => {
      const page = await rt.store.listRuns({ tenantId: CHILD_TENANT, cursor: null, limit: 1000 });
      const out: Checkpoint[] = [];
      for (const run of page.runs) {
        const cp = await load(run.runId);
        if (cp?.identity.parent?.runId === parentRunId) out.push(cp);
      }
      return out;
    },
    stop: async () => {
      await api.close();
      await rt.close();
    },
  };
}

/** The final assistant text of a run. */
export function finalAnswer(cp: Checkpoint): string {
  const answers = cp.messages.filter((m) => m.role === 'assistant' && m.content !== '');
  const last = answers[answers.length - 1];
  return last?.role === 'assistant' ? last.content : '';
}
