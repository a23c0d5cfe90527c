/**
 * Your own worker entry: the agents are yours, Baton's worker SDK runs them.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 BATON_PREFIX=baton npm run example:own-worker
 *
 * (`npm run` runs it on the project's Node 24, which runs TypeScript as it is, whatever your Node
 * is.) Start the API against the same Redis and prefix (`REDIS_URL=… BATON_PREFIX=… npm run api`,
 * with API_KEYS); `GET /v1/agents` then lists `echo` and `haiku` with this worker, and their runs
 * start.
 *
 * In another project the imports are the same. The packages are not on the npm registry yet, so
 * install them from a clone of this repository: `npm run pack:packages` there writes five
 * tarballs to .cache/packs (JavaScript and type declarations; Node 20.17+), then in your project
 *
 *   npm install <clone>/.cache/packs/baton-protocol-*.tgz <clone>/.cache/packs/baton-core-*.tgz \
 *     <clone>/.cache/packs/baton-client-*.tgz <clone>/.cache/packs/baton-runtime-*.tgz \
 *     <clone>/.cache/packs/baton-worker-*.tgz ioredis
 *
 * and run your entry file with Node 24 (`node worker.ts`: it runs TypeScript), or write it in
 * JavaScript and run it with Node 20.17+.
 */
import { Redis } from 'ioredis';
import { createWorker } from '@baton/worker';
import { echo, haiku } from './my-agents.ts';

// Your own client (TLS, auth, Sentinel, a Cluster...): the worker uses it and never closes it.
// A URL works as well: `redis: process.env.REDIS_URL`.
const redis = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');

const worker = createWorker({
  agents: [echo, haiku],
  redis,
  prefix: process.env['BATON_PREFIX'] ?? 'baton', // the API's BATON_PREFIX
  config: { workerConcurrency: 8, logLevel: 'info' }, // WORKER_CONCURRENCY, LOG_LEVEL in camelCase
});
await worker.start();
console.log(`worker ${worker.id} runs: ${[echo.name, haiku.name].join(', ')}`);

// A rolling deploy sends SIGTERM: finish in-flight jobs (up to SHUTDOWN_GRACE_MS), then leave.
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => {
    void worker.stop().finally(() => redis.quit());
  });
