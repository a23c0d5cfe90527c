/**
 * Your own worker entry: the agents are yours, Baton's worker SDK runs them.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 node examples/own-worker.ts
 *
 * Start the API as usual (`npm start`, or `node apps/api/src/main.ts`) against the same Redis and
 * prefix; `GET /v1/agents` then lists `echo` and `haiku` with this worker, and their runs start.
 * In another project the imports are the same: `npm install @baton/core @baton/worker`.
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
  config: { WORKER_CONCURRENCY: 8, LOG_LEVEL: 'info' },
});
await worker.start();
console.log(`worker ${worker.id} runs: ${[echo.name, haiku.name].join(', ')}`);

// A rolling deploy sends SIGTERM: finish in-flight jobs (up to SHUTDOWN_GRACE_MS), then leave.
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => {
    void worker.stop().finally(() => redis.quit());
  });
