/**
 * worker-redis.ts: `inject('redisUrl')` is the Redis of the worker this file runs on, one per
 * worker (global-setup.ts), so files running side by side never share a Redis.
 */
import { expect, it } from 'vitest';
import { inject } from 'vitest';

it("inject('redisUrl') answers this worker's own Redis, one per worker", () => {
  const urls = inject('redisUrls');
  const pool = Number(process.env['VITEST_POOL_ID']);
  expect(pool).toBeGreaterThanOrEqual(1);
  if (inject('redisSource') === 'redis-server') expect(new Set(urls).size).toBe(urls.length);
  expect(inject('redisUrl')).toBe(urls[(pool - 1) % urls.length]);
});
