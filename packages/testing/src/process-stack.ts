/**
 * Test fixture: one worker PROCESS and one in-process API on a Redis the test controls (e.g. a
 * RedisProcess it kills and restarts), with one tenant key. For outage and durability tests.
 */
import { hashKey, loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { ApiClient } from './api-harness.ts';
import { silentLogger, testPrefix } from './worker-harness.ts';
import { spawnWorker, type WorkerProcess } from './worker-process.ts';

export interface ProcessStack {
  readonly api: RunningApi;
  readonly worker: WorkerProcess;
  /** A JSON client with the tenant key. */
  readonly client: ApiClient;
  /** Closes the API; the worker process is stopped by stopAllWorkerProcesses(). */
  stop(): Promise<void>;
}

export async function startProcessStack(
  redisUrl: string,
  opts: { env?: Record<string, string>; workerEnv?: Record<string, string> } = {},
): Promise<ProcessStack> {
  const prefix = testPrefix();
  const key = `stack-key-${prefix}`;
  const worker = await spawnWorker({
    redisUrl,
    prefix,
    agents: 'demo',
    probes: false,
    env: { ...opts.env, ...opts.workerEnv },
  });
  const config = loadApiConfig({
    REDIS_URL: redisUrl,
    BATON_PREFIX: prefix,
    API_KEYS: `stack:sha256:${hashKey(key)}`,
    LOG_LEVEL: 'silent',
    ...opts.env,
  });
  const api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  return { api, worker, client: new ApiClient(api.url, key), stop: () => api.close() };
}
