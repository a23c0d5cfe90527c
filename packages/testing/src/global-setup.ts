/**
 * Vitest globalSetup: starts ONE isolated Redis for the whole run and provides its URL
 * to tests as `inject('redisUrl')`. Tests isolate their keys with `uniquePrefix()`.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { chromiumSkipNotice } from './browser.ts';
import { startRedis, type RedisSource } from './redis.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the Redis started (or selected) for this test run. */
    redisUrl: string;
    /** How that Redis was obtained. */
    redisSource: RedisSource;
  }
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
  const redis = await startRedis();
  project.provide('redisUrl', redis.url);
  project.provide('redisSource', redis.source);
  return async () => {
    await redis.stop();
  };
}
