/**
 * Vitest globalSetup of the integration and faults projects: starts one private Redis per test
 * worker (`maxWorkers` of them, vitest.config.ts) and provides their URLs; the setup file
 * worker-redis.ts makes `inject('redisUrl')` answer the one of the worker a file runs on
 * (VITEST_POOL_ID). A worker runs one file at a time, so a file has its Redis to itself: tests
 * that read server-wide figures (INFO, commandstats, DBSIZE, MONITOR, CLIENT LIST, keyspace
 * scans) see only their own traffic while other files run beside them. Tests still isolate
 * their keys with `uniquePrefix()`: a worker's Redis outlives the file.
 *
 * It also marks the run (run-processes.ts): every process the tests start carries the marker,
 * the teardown kills what is left, and a watchdog does it if vitest dies without tearing down.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { chromiumSkipNotice } from './browser.ts';
import { startRedis, startRedisServer, type RedisHandle, type RedisSource } from './redis.ts';
import {
  commandLine,
  newRunMarker,
  RUN_MARKER_VAR,
  startWatchdog,
  sweepRunProcesses,
  type Watchdog,
} from './run-processes.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the Redis of the worker this file runs on (worker-redis.ts picks it). */
    redisUrl: string;
    /** One Redis per worker, indexed by VITEST_POOL_ID - 1. */
    redisUrls: string[];
    /** How that Redis was obtained. */
    redisSource: RedisSource;
  }
}

/**
 * Marks this run's processes and starts the watchdog, once per vitest process (two projects of
 * one run share them). Returns the teardown sweep.
 */
export function markRun(): () => Promise<void> {
  const marker = newRunMarker();
  process.env[RUN_MARKER_VAR] = marker;
  const watchdog: Watchdog = startWatchdog(marker);
  return async () => {
    // vitest's own workers (children of this process) may still be writing coverage.
    const left = await sweepRunProcesses(marker, {
      keep: (pid, ppid) => ppid === process.pid && /vitest/.test(commandLine(pid)),
    });
    if (left.length > 0)
      console.warn(
        `[baton tests] killed ${left.length} process(es) the tests left running:\n  ${left.join('\n  ')}`,
      );
    watchdog.release();
  };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The Node the tests run on (npm scripts use the project's own Node 24 whatever the system has).
  console.info(`[baton tests] node ${process.version} (${process.execPath})`);
  // The console tests are integration tests: say once why they skip, if they do.
  const notice = project.name === 'integration' ? chromiumSkipNotice() : undefined;
  if (notice !== undefined) console.warn(notice);
  // The CLI's bundle (packages/cli/scripts/bundle.js), built once here when a source changed,
  // rather than by the first of the CLI processes the tests start in parallel.
  execFileSync(
    process.execPath,
    [fileURLToPath(new URL('../../cli/scripts/bundle.js', import.meta.url))],
    { stdio: 'ignore' },
  );
  const unmark = markRun();
  const workers = Math.max(1, project.config.maxWorkers);
  const first = await startRedis().catch(async (err: unknown) => {
    await unmark();
    throw err;
  });
  const redises: RedisHandle[] = [first];
  if (first.source === 'redis-server') {
    const more = await Promise.allSettled(
      Array.from({ length: workers - 1 }, () => startRedisServer()),
    );
    for (const r of more) if (r.status === 'fulfilled') redises.push(r.value);
    const failed = more.find((r) => r.status === 'rejected');
    if (failed !== undefined) {
      await Promise.all(redises.map((r) => r.stop()));
      await unmark();
      throw failed.reason;
    }
  } else if (workers > 1) {
    // REDIS_URL, or one container: the workers share it.
    console.warn(
      `[baton tests] one Redis (${first.source}) for ${workers} workers: tests that read server-wide figures may see each other's traffic (run with --maxWorkers=1)`,
    );
  }
  project.provide(
    'redisUrls',
    redises.map((r) => r.url),
  );
  project.provide('redisUrl', redises[0]!.url);
  project.provide('redisSource', redises[0]!.source);
  return async () => {
    await Promise.all(redises.map((r) => r.stop()));
    await unmark();
  };
}
