import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { duplicateClient, isRedisUnavailable } from './connection.ts';
import { FailFastCluster } from '../internals/ioredis/fail-fast-cluster.ts';
import { createRedisClient, parseNatMap } from './redis-client.ts';
import type { RedisClient } from './scripts.ts';
import { runtimeConfigShape } from '../config/runtime-config.ts';
import { z } from 'zod';

/** Port 1: nothing answers there, and these tests only look at the options. */
const NOWHERE = '127.0.0.1:1';
const made: RedisClient[] = [];

function build(...args: Parameters<typeof createRedisClient>): RedisClient {
  const client = createRedisClient(...args);
  client.on('error', () => undefined);
  made.push(client);
  return client;
}

afterEach(() => {
  for (const c of made.splice(0)) c.disconnect();
});

describe('createRedisClient', () => {
  it('one node: the API fails fast, a worker waits, both reconnect within a second', () => {
    const api = build({ REDIS_URL: `redis://${NOWHERE}` }, { role: 'api', connectionName: 'a' });
    expect(api).toBeInstanceOf(Redis);
    expect(api.options).toMatchObject({
      connectionName: 'a',
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      commandTimeout: 2_000,
    });
    const worker = build(
      { REDIS_URL: `redis://${NOWHERE}` },
      { role: 'worker', connectionName: 'w' },
    );
    expect(worker.options).toMatchObject({ maxRetriesPerRequest: null, enableOfflineQueue: true });
    expect((worker as Redis).options.retryStrategy?.(20)).toBeLessThanOrEqual(1_000);
    // BullMQ's shared connection keeps its offline queue (its QUIT must not throw).
    const bull = build(
      { REDIS_URL: `redis://${NOWHERE}` },
      { role: 'api', connectionName: 'b', bullmq: true },
    );
    expect(bull.options).toMatchObject({ maxRetriesPerRequest: 1, enableOfflineQueue: true });
  });

  it('a cluster: fail-fast API (≤ 0.5 s) and a worker that rides out a failover', () => {
    const settings = {
      REDIS_URL: `rediss+cluster://app:pw@${NOWHERE},127.0.0.1:2`,
      REDIS_NAT_MAP: '{"10.0.0.1:6379":{"host":"127.0.0.1","port":1}}',
      REDIS_CLUSTER_DNS_LOOKUP: 'passthrough' as const,
    };
    const api = build(settings, { role: 'api', connectionName: 'a' }) as Cluster;
    expect(api).toBeInstanceOf(Cluster);
    expect((api as unknown as { startupNodes: unknown }).startupNodes).toEqual([
      { host: '127.0.0.1', port: 1 },
      { host: '127.0.0.1', port: 2 },
    ]);
    const o = api.options;
    expect(o).toMatchObject({
      enableOfflineQueue: false,
      natMap: { '10.0.0.1:6379': { port: 1 } },
    });
    expect(o.redisOptions).toMatchObject({
      username: 'app',
      password: 'pw',
      tls: {},
      commandTimeout: 500,
      maxRetriesPerRequest: 1,
      connectionName: 'a',
    });
    // Redirections and their waits stay within half a second.
    expect(
      o.maxRedirections! * Math.max(o.retryDelayOnClusterDown!, o.retryDelayOnFailover!),
    ).toBeLessThanOrEqual(500);
    const looked: string[] = [];
    o.dnsLookup!('node-1.example.com', (_e, address) => looked.push(address));
    expect(looked).toEqual(['node-1.example.com']);

    const worker = build(settings, { role: 'worker', connectionName: 'w' }) as Cluster;
    const w = worker.options;
    expect(w.redisOptions).toMatchObject({ maxRetriesPerRequest: null });
    // At least a minute of waiting through CLUSTERDOWN / TRYAGAIN / a lost master; retries at
    // most a fifth of a second apart, so work resumes within a second of the cluster answering.
    for (const delay of [
      w.retryDelayOnClusterDown!,
      w.retryDelayOnTryAgain!,
      w.retryDelayOnFailover!,
    ]) {
      expect(delay).toBeLessThanOrEqual(200);
      expect(w.maxRedirections! * delay).toBeGreaterThanOrEqual(60_000);
    }
    expect(w.clusterRetryStrategy?.(50)).toBeLessThanOrEqual(1_000);
  });

  it("a worker's BullMQ connection waits out a failover too (its Workers block elsewhere)", () => {
    const bull = build(
      { REDIS_URL: `redis+cluster://${NOWHERE}` },
      { role: 'worker', connectionName: 'b', bullmq: true },
    ) as Cluster;
    // A job's completion that gave up within 2 s left it to be taken over as a stalled job, 30 s
    // and more later; blocking commands go to slot owner connections (worker-backend.ts).
    expect(
      bull.options.maxRedirections! * bull.options.retryDelayOnClusterDown!,
    ).toBeGreaterThanOrEqual(60_000);
    expect(bull.options.retryDelayOnClusterDown).toBeLessThanOrEqual(200);
    expect(bull.options.redisOptions).toMatchObject({ maxRetriesPerRequest: null });
  });

  it('an API cluster refuses commands at once for a moment after the cluster said it cannot serve', async () => {
    const api = build(
      { REDIS_URL: `redis+cluster://${NOWHERE}` },
      { role: 'api', connectionName: 'a' },
    );
    // Not ready (nothing answers): the first command is refused by ioredis itself, after which
    // the next ones are not even sent, whatever they are.
    await expect(api.get('k')).rejects.toThrow(/Cluster isn't ready/);
    await expect(api.set('other', '1')).rejects.toThrow(/CLUSTERDOWN.*not sent/);
    expect(isRedisUnavailable(await api.get('k').catch((e: unknown) => e))).toBe(true);
    // Subscribers duplicated from it wait instead (a plain Cluster).
    const sub = duplicateClient(api, { maxRetriesPerRequest: null });
    made.push(sub);
    expect(sub).not.toBeInstanceOf(FailFastCluster);
  });

  it('a duplicate of an API cluster for a subscriber is patient at the cluster level too', () => {
    const api = build(
      { REDIS_URL: `redis+cluster://${NOWHERE}` },
      { role: 'api', connectionName: 'a' },
    );
    const sub = duplicateClient(api, { maxRetriesPerRequest: null, enableOfflineQueue: true });
    made.push(sub);
    sub.on('error', () => undefined);
    expect(sub).toBeInstanceOf(Cluster);
    const o = (sub as Cluster).options;
    expect(o.enableOfflineQueue).toBe(true);
    expect(o.maxRedirections).toBeGreaterThanOrEqual(300);
    expect(o.redisOptions).toMatchObject({ maxRetriesPerRequest: null });
  });

  it('Sentinel: the named master through its sentinels', () => {
    const client = build(
      { REDIS_URL: `redis+sentinel://:pw@${NOWHERE}/mymaster/2` },
      { role: 'worker', connectionName: 'w' },
    ) as Redis;
    expect(client.options).toMatchObject({
      sentinels: [{ host: '127.0.0.1', port: 1 }],
      name: 'mymaster',
      password: 'pw',
      db: 2,
      maxRetriesPerRequest: null,
    });
  });
});

describe('configuration', () => {
  const schema = z.object(runtimeConfigShape);

  it('names the variable and says what a valid value looks like', () => {
    const bad = schema.safeParse({ REDIS_URL: 'redis+cluster://h1:0' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]).toMatchObject({ path: ['REDIS_URL'] });
    expect(bad.error?.issues[0]?.message).toMatch(/^has an invalid port in "h1:0"; use redis:\/\//);
    const nat = schema.safeParse({ REDIS_NAT_MAP: '{"10.0.0.1:6379":{"host":"x"}}' });
    expect(nat.error?.issues[0]).toMatchObject({ path: ['REDIS_NAT_MAP'] });
    expect(schema.safeParse({ REDIS_CLUSTER_DNS_LOOKUP: 'dns' }).success).toBe(false);
    expect(schema.parse({ REDIS_URL: 'redis+cluster://h1:7000,h2:7000' }).REDIS_URL).toBe(
      'redis+cluster://h1:7000,h2:7000',
    );
  });

  it('REDIS_NAT_MAP maps announced addresses to reachable ones', () => {
    expect(parseNatMap('{"10.0.0.1:6379":{"host":"a.example.com","port":7000}}')).toEqual({
      '10.0.0.1:6379': { host: 'a.example.com', port: 7000 },
    });
    expect(() => parseNatMap('{')).toThrow(/not valid JSON/);
    expect(() => parseNatMap('{"h":{"host":"a","port":1}}')).toThrow(/host:port/);
  });
});
