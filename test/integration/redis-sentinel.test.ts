/**
 * Issue 22 item 1: REDIS_URL=redis+sentinel://host:port[,…]/<masterName>[/db] reaches the master
 * a Sentinel group names. A real redis-server and a real Sentinel (`redis-server --sentinel`);
 * the shipped worker, configured by REDIS_URL alone, runs a run on that master.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { BatonRuntime, createRedisClient, systemClock } from '@baton/runtime';
import { findRedisServer, freePort, pingRedis } from '@baton/testing/redis';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import { BatonWorker } from '@baton/worker';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function startSentinel(master: RedisProcess): Promise<number> {
  const bin = await findRedisServer();
  if (!bin) throw new Error('redis-server is needed on PATH for this test');
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'baton-sentinel-'));
  const conf = join(dir, 'sentinel.conf');
  await writeFile(
    conf,
    `port ${port}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor baton-main 127.0.0.1 ${master.port} 1\n`,
  );
  const child: ChildProcess = spawn(bin, [conf, '--sentinel'], { stdio: 'ignore' });
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  const deadline = Date.now() + 10_000;
  while (!(await pingRedis(`redis://127.0.0.1:${port}`, 200))) {
    if (Date.now() > deadline) throw new Error('sentinel did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  return port;
}

describe('REDIS_URL=redis+sentinel://…', () => {
  it('reaches the master the Sentinels name, and a worker runs a run there', async () => {
    const master = await startRedisProcess({ aof: 'off' });
    cleanups.push(() => master.stop());
    const sentinel = await startSentinel(master);
    const url = `redis+sentinel://127.0.0.1:${sentinel}/baton-main`;

    const client = createRedisClient({ REDIS_URL: url }, { role: 'worker', connectionName: 's' });
    cleanups.push(() => client.quit());
    expect((await client.info('server')).match(/^tcp_port:(\d+)/m)?.[1]).toBe(String(master.port));

    const config = testConfig(url, testPrefix());
    const worker = new BatonWorker({
      config,
      agents: createDemoAgents(systemClock),
      logger: silentLogger,
    });
    await worker.start();
    cleanups.push(() => worker.stop(500));
    const runtime = new BatonRuntime({ config, logger: silentLogger });
    cleanups.push(() => runtime.close());
    const created = await runtime.service.createRun('t1', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Quito?' }] },
    });
    const cp = await waitFor(async () => {
      const stored = await runtime.store.load(created.runId);
      return stored?.checkpoint.status === 'done' ? stored.checkpoint : null;
    });
    expect(cp.termination).toEqual({ kind: 'natural_end' });
  });
});
