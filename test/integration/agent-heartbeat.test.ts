/**
 * Agent adverts expire: a worker killed without a word (SIGKILL) stops heartbeating and drops out
 * of GET /v1/agents once its TTL passes, while its agent stays known (listed unavailable when no
 * live worker is left) and the workers still alive stay listed.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { BatonClient } from '@baton/client';
import type { AgentDescriptor } from '@baton/protocol';
import { silentLogger, testPrefix, waitFor } from '@baton/testing/worker-harness';
import {
  spawnWorker,
  stopAllWorkerProcesses,
  type WorkerProcess,
} from '@baton/testing/worker-process';

const KEY = 'heartbeat-secret-key-1';

describe('agent heartbeats', () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  let api: RunningApi;
  let baton: BatonClient;

  beforeAll(async () => {
    const config = loadApiConfig({
      REDIS_URL: redisUrl,
      BATON_PREFIX: prefix,
      API_KEYS: `tenant-a:${KEY}`,
      LOG_LEVEL: 'silent',
    });
    api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
    baton = new BatonClient({ baseUrl: api.url, apiKey: KEY });
  });

  afterAll(async () => {
    await stopAllWorkerProcesses();
    await api?.close();
  });

  const bench = async (): Promise<AgentDescriptor | undefined> =>
    (await baton.agents.list()).find((a) => a.name === 'bench');

  it(
    'GET /v1/agents drops a killed worker once its heartbeat expires',
    { timeout: 30_000 },
    async () => {
      const env = { AGENT_HEARTBEAT_TTL_MS: '600' };
      const spawn = (): Promise<WorkerProcess> =>
        spawnWorker({ redisUrl, prefix, agents: 'bench', env });
      const [victim, survivor] = await Promise.all([spawn(), spawn()]);
      expect((await bench())?.workers).toEqual([victim.id, survivor.id].sort());

      victim.kill('SIGKILL');
      await victim.waitForExit();
      const after = await waitFor(
        async () => {
          const listed = await bench();
          return listed?.workers.length === 1 ? listed : null;
        },
        10_000,
        'the killed worker to drop out',
      );
      expect(after).toMatchObject({ workers: [survivor.id], available: true });

      survivor.kill('SIGKILL');
      await survivor.waitForExit();
      // Still known (runs for it are accepted and wait), but nobody runs it now.
      const gone = await waitFor(
        async () => {
          const listed = await bench();
          return listed?.available === false ? listed : null;
        },
        10_000,
        'the agent to become unavailable',
      );
      expect(gone.workers).toEqual([]);
      expect(await baton.agents.get('bench')).toMatchObject({
        name: 'bench',
        workers: [],
        available: false,
      });
    },
  );
});
