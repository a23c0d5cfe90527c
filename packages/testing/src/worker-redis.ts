/**
 * Vitest setup file of the integration and faults projects: points `inject('redisUrl')` at the
 * Redis of the worker this file runs on (global-setup.ts starts one per worker), so tests keep
 * reading it as they always did. VITEST_POOL_ID (1..maxWorkers) names the worker; no two files
 * run on one worker at the same time.
 *
 * Vitest has no per-worker `provide`, so this writes the worker's copy of the provided context
 * (`globalThis.__vitest_worker__.providedContext`, what `inject` reads) and checks through
 * `inject` that it took: a vitest upgrade that moves it fails here, loudly, not as tests
 * quietly sharing one Redis.
 */
import { inject } from 'vitest';

const urls = inject('redisUrls');
const pool = Number(process.env['VITEST_POOL_ID'] ?? '1');
const own = urls[(Math.max(1, pool) - 1) % urls.length]!;

interface WorkerState {
  providedContext?: Record<string, unknown>;
}
const state = (globalThis as { __vitest_worker__?: WorkerState }).__vitest_worker__;
if (state?.providedContext !== undefined) state.providedContext['redisUrl'] = own;
if (inject('redisUrl') !== own)
  throw new Error(
    `worker-redis.ts: could not point inject('redisUrl') at this worker's Redis (${own}); vitest's worker state moved (globalThis.__vitest_worker__.providedContext)`,
  );
