/**
 * Issue 32 item 21: SIGTERM ends a worker and an API whose Redis is gone, within their grace
 * (SHUTDOWN_GRACE_MS) plus a small fixed margin. Before, a worker whose Redis had stopped logged
 * "grace period over", then "queue connections did not close", and stayed alive for good
 * (orphaned workers ran for an hour): closing its connections waited for a Redis that never came
 * back. Real processes, a private redis-server that is stopped under them, then SIGTERM.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawnApi, stopAllApiProcesses } from '@baton/testing/api-process';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import { testPrefix } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const GRACE_MS = 3_000;
/** The processes' own margin is 5 s; the rest is room for a loaded machine. */
const BOUND_MS = GRACE_MS + 15_000;

let redis: RedisProcess | undefined;

afterAll(async () => {
  await stopAllWorkerProcesses();
  await stopAllApiProcesses();
  await redis?.stop();
});

/** Resolves with how long the exit took, or rejects if it did not come within BOUND_MS. */
async function exitWithin<T>(exited: Promise<T>, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${what()}\nstill alive ${String(BOUND_MS)} ms after SIGTERM`)),
          BOUND_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('SIGTERM with Redis gone (issue 32 item 21)', () => {
  it(
    'a worker and an API exit within their grace plus a margin',
    { timeout: 120_000 },
    async () => {
      redis = await startRedisProcess({ aof: 'off' });
      const prefix = testPrefix();
      const worker = await spawnWorker({
        redisUrl: redis.url,
        prefix,
        probes: false,
        logLevel: 'info',
        env: { SHUTDOWN_GRACE_MS: String(GRACE_MS) },
      });
      const api = await spawnApi({
        redisUrl: redis.url,
        prefix,
        keys: 'shutdown:shutdown-key-123456',
        env: { SHUTDOWN_GRACE_MS: String(GRACE_MS), LOG_LEVEL: 'info' },
      });
      await redis.kill('SIGKILL');
      const signalled = Date.now();
      worker.kill('SIGTERM');
      api.kill('SIGTERM');
      const [w, a] = await Promise.all([
        exitWithin(worker.exited, () => `the worker, output:\n${worker.output()}`),
        exitWithin(api.exited, () => `the API, output:\n${api.output()}`),
      ]);
      console.info(
        `[shutdown-redis-gone] worker exited after ${String(w.at - signalled)} ms (code ${String(w.code)}), API exit code ${String(a.code)}`,
      );
      expect(w.signal).toBeNull();
      expect(a.signal).toBeNull();
    },
  );
});
