/**
 * Issue 22: a standalone REDIS_URL (redis://) that points at a Redis Cluster node used to make
 * the worker exit with `MOVED 8105 …` and the API answer 500. Both now refuse to start with one
 * line naming the setting to use. One `redis-server --cluster-enabled yes` node is enough: no
 * cluster needs to be formed for INFO to say cluster_enabled:1.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawnApi, stopAllApiProcesses } from '@baton/testing/api-process';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import { testPrefix } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

let node: RedisProcess | undefined;

afterAll(async () => {
  await stopAllWorkerProcesses();
  await stopAllApiProcesses();
  await node?.stop();
});

const ONE_LINE =
  /REDIS_URL points at a Redis Cluster node; set REDIS_URL=redis\+cluster:\/\/host:port\[,host:port…\]/;

describe('a standalone REDIS_URL pointing at a Redis Cluster node', () => {
  it('stops the worker and the API at start with one line naming the setting to use', async () => {
    node = await startRedisProcess({
      aof: 'off',
      args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
    });
    const worker = await spawnWorker({ redisUrl: node.url, prefix: testPrefix() }).catch(
      (error: unknown) => error,
    );
    expect(String(worker)).toMatch(new RegExp(`baton-worker: ${ONE_LINE.source}`));
    expect(String(worker)).not.toMatch(/MOVED/);

    const api = await spawnApi({ redisUrl: node.url, prefix: testPrefix(), keys: '' }).catch(
      (error: unknown) => error,
    );
    expect(String(api)).toMatch(/API exited before listening \(1\)/);
    expect(String(api)).toMatch(new RegExp(`\\[stderr\\] baton-api: ${ONE_LINE.source}`));
    expect(String(api)).not.toMatch(/^\s+at /m);
  });
});
