/**
 * Worker of the HTTP floor (bench/http-floor.ts), a child process like Baton's worker: a raw
 * BullMQ Worker running the raw baseline's 3-job chain, where each job first commits one event
 * (XADD to the run's stream + PUBLISH on its channel, one script, one round trip) and then adds
 * the chain's next job. The last job's event is `run.finished`. No Baton code.
 * Env: REDIS_URL, FLOOR_BULL_PREFIX, FLOOR_KEY_PREFIX, FLOOR_CONCURRENCY, and
 * BENCH_FLOOR_EVENTS_PER_JOB (default 1): events each job commits, each its own pub/sub message,
 * for a floor whose runs send about as many messages as Baton's (a `bench` run: ≈ 6.75).
 * Prints `READY`.
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { FLOOR_EMIT_SCRIPT, floorKeys, type FloorLink } from './http-floor-protocol.ts';
import { rawJobOptions } from './raw-job-options.ts';

const url = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const bullPrefix = process.env['FLOOR_BULL_PREFIX'] ?? 'floor-bull';
const keyPrefix = process.env['FLOOR_KEY_PREFIX'] ?? 'floor';
const concurrency = Number(process.env['FLOOR_CONCURRENCY'] ?? '16');
const eventsPerJob = Math.max(1, Number(process.env['BENCH_FLOOR_EVENTS_PER_JOB'] ?? '1') || 1);
// The finished run's log outlives it long enough for a late reader, then goes (as Baton's does).
const RETENTION_SECONDS = '3600';

const connection: ConnectionOptions = { url, maxRetriesPerRequest: null };
const redis = new Redis(url, { maxRetriesPerRequest: null, connectionName: 'floor-worker' });
const queue = new Queue('floor', { connection, prefix: bullPrefix });
const emitSha = (await redis.script('LOAD', FLOOR_EMIT_SCRIPT)) as string;

const worker = new Worker(
  'floor',
  async (job) => {
    const link = job.data as FloorLink;
    const keys = floorKeys(keyPrefix, link.tenant, link.runId);
    const lastJob = link.i + 1 === link.length;
    for (let k = 1; k <= eventsPerJob; k += 1) {
      const seq = link.i * eventsPerJob + k;
      const final = lastJob && k === eventsPerJob;
      const at = Date.now();
      const event = final
        ? {
            type: 'run.finished',
            runId: link.runId,
            seq,
            at,
            status: 'done',
            termination: { kind: 'natural_end' },
          }
        : { type: 'step.finished', runId: link.runId, seq, at, step: link.i + 1 };
      await redis.evalsha(
        emitSha,
        1,
        keys.stream,
        String(seq),
        final ? 'f' : 'e',
        JSON.stringify(event),
        keys.channel,
        final ? RETENTION_SECONDS : '0',
      );
    }
    if (!lastJob) {
      const next: FloorLink = {
        tenant: link.tenant,
        runId: link.runId,
        i: link.i + 1,
        length: link.length,
      };
      await queue.add('link', next, rawJobOptions(`${link.runId}.${link.i + 1}`));
    }
  },
  { connection, prefix: bullPrefix, concurrency },
);
await worker.waitUntilReady();
process.stdout.write('READY floor-worker\n');

process.on('SIGTERM', () => {
  void (async () => {
    await worker.close();
    await queue.close();
    redis.disconnect();
    process.exit(0);
  })();
});
