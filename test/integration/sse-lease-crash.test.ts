/**
 * Issue 32 item 19: the SSE leases of an API killed with kill -9 stop counting against
 * SSE_MAX_PER_TENANT as soon as it is known dead, not after SSE_LEASE_MS: followers that
 * reconnect at once to the restarted API are not refused. Before, 100 followers got 429 until
 * p50 25 s. Real API processes; the run followed waits for a worker (none runs its agent), so
 * its streams stay open.
 */
import { request, type ClientRequest } from 'node:http';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ScriptedModel } from '@baton/core';
import { BatonRuntime } from '@baton/runtime';
import { AgentRegistry } from '@baton/runtime/internal';
import { ApiClient } from '@baton/testing/api-harness';
import { spawnApi, stopAllApiProcesses, type ApiProcess } from '@baton/testing/api-process';
import { silentLogger, testConfig, testPrefix } from '@baton/testing/worker-harness';

const KEY = 'sse-crash-tenant-key-1';
const STREAMS = 50;

const open: ClientRequest[] = [];

/** Opens a stream and leaves it open; resolves with its status. */
function openStream(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${KEY}` } }, (res) => {
      res.on('error', () => undefined);
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    open.push(req);
    req.on('error', reject);
    req.end();
  });
}

afterAll(async () => {
  for (const req of open) req.destroy();
  await stopAllApiProcesses();
});

describe('SSE leases of a killed API (issue 32 item 19)', () => {
  it(
    `${String(STREAMS)} followers reconnecting at once to the restarted API get no 429`,
    { timeout: 120_000 },
    async () => {
      const redisUrl = inject('redisUrl');
      const prefix = testPrefix();
      const client = new BatonRuntime({
        config: testConfig(redisUrl, prefix),
        logger: silentLogger,
      });
      try {
        // An agent with no worker: its run waits, and a stream of it stays open.
        await new AgentRegistry([
          { name: 'idle', model: new ScriptedModel([{ text: 'never' }]), tools: [] },
        ]).advertise(client.redis, client.keys, 'advert-only', Date.now(), 'default');
        const spawn = (): Promise<ApiProcess> =>
          spawnApi({
            redisUrl,
            prefix,
            keys: `tenant-s:${KEY}`,
            env: { SSE_MAX_PER_TENANT: String(STREAMS) },
          });
        const first = await spawn();
        const { runId } = await new ApiClient(first.url, KEY).createRun('idle');
        const path = `/v1/runs/${runId}/events`;
        const before = await Promise.all(
          Array.from({ length: STREAMS }, () => openStream(`${first.url}${path}`)),
        );
        expect(before.filter((s) => s !== 200)).toEqual([]);
        expect(await openStream(`${first.url}${path}`)).toBe(429);

        first.kill('SIGKILL');
        await first.exited;
        const second = await spawn();
        const after = await Promise.all(
          Array.from({ length: STREAMS }, () => openStream(`${second.url}${path}`)),
        );
        expect(after.filter((s) => s !== 200)).toEqual([]);
        // The limit still holds for the live instance's streams.
        expect(await openStream(`${second.url}${path}`)).toBe(429);
      } finally {
        await client.close();
      }
    },
  );
});
