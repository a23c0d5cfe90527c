import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { findRedisServer, freePort, pingRedis, startRedisServer, uniquePrefix } from './redis.ts';

describe('Redis test fixture', () => {
  const url = inject('redisUrl');
  const source = inject('redisSource');
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });

  afterAll(async () => {
    await redis.quit();
  });

  it('provides a working Redis URL', async () => {
    await redis.connect();
    const key = `${uniquePrefix('fixture')}:hello`;
    await redis.set(key, 'world', 'EX', 60);
    expect(await redis.get(key)).toBe('world');
    await redis.del(key);
  });

  it('never uses the shared 6379 instance when it starts its own server', () => {
    expect(['env', 'redis-server', 'testcontainers']).toContain(source);
    if (source === 'redis-server') {
      const parsed = new URL(url);
      expect(parsed.hostname).toBe('127.0.0.1');
      expect(parsed.port).not.toBe('6379');
    }
  });

  it('uniquePrefix gives distinct, colon-free prefixes', () => {
    const a = uniquePrefix('a b:c');
    const b = uniquePrefix('a b:c');
    expect(a).not.toBe(b);
    expect(a).not.toContain(':');
    expect(a).not.toContain(' ');
  });

  it('freePort returns a usable port number', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
    expect(port).toBeLessThan(65536);
  });

  it('stop() really stops a separately started redis-server', async (ctx) => {
    if ((await findRedisServer()) === undefined) {
      ctx.skip('redis-server is not on PATH');
      return;
    }
    const second = await startRedisServer();
    expect(second.source).toBe('redis-server');
    expect(second.url).not.toBe(url);
    expect(await pingRedis(second.url)).toBe(true);

    await second.stop();
    expect(await pingRedis(second.url)).toBe(false);
    await second.stop(); // idempotent
  });
});
