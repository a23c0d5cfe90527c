/**
 * Baseline for the HTTP throughput scenario: raw BullMQ "runs" with no Baton and no HTTP. A run
 * is a chain of `length` jobs (each processor adds the next job, as Baton's step jobs do); a
 * closed loop keeps `inFlight` chains going until `total` have finished. Same job options as
 * Baton's step jobs (explicit ids, retention of completed jobs). The Worker runs in this process.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Queue, Worker, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { bullPrefix } from '@baton/runtime';
import { benchClient, redisSnapshot, round, withTimeout } from './lib.ts';
import { rawJobOptions } from './raw-job-options.ts';
import { lanes, stats, type Stats } from './stats.ts';

export interface RawChainsResult {
  readonly runs: number;
  readonly jobsPerRun: number;
  readonly inFlight: number;
  readonly concurrency: number;
  readonly runsPerSec: number;
  readonly jobsPerSec: number;
  readonly latencyMs: Stats;
  readonly cpuMsPerRun: { readonly workerAndClient: number; readonly redis: number };
}

interface Link {
  readonly chain: string;
  readonly i: number;
  readonly length: number;
}

export async function rawChains(
  url: string,
  opts: {
    total: number;
    warmup: number;
    inFlight: number;
    length: number;
    concurrency: number;
    timeoutMs: number;
    /** BullMQ priority of every job (Baton's run levels); absent: the plain wait list. */
    priority?: number;
  },
): Promise<RawChainsResult> {
  const connection: ConnectionOptions = { url, maxRetriesPerRequest: null };
  const prefix = bullPrefix(`bench-raw-${randomBytes(3).toString('hex')}`);
  const queue = new Queue('raw', { connection, prefix });
  const jobOpts = (jobId: string): JobsOptions => rawJobOptions(jobId, opts.priority);
  const waiting = new Map<string, (t: number) => void>();
  const worker = new Worker(
    'raw',
    async (job) => {
      const link = job.data as Link;
      if (link.i + 1 < link.length) {
        const next: Link = { ...link, i: link.i + 1 };
        await queue.add('link', next, jobOpts(`${link.chain}.${next.i}`));
      }
    },
    { connection, prefix, concurrency: opts.concurrency },
  );
  worker.on('completed', (job) => {
    const link = job.data as Link;
    if (link.i + 1 === link.length) waiting.get(link.chain)?.(performance.now());
  });
  const bench = benchClient(url, 'bench-raw');
  try {
    await worker.waitUntilReady();
    const one = async (batch: string, i: number): Promise<number> => {
      const chain = `${batch}-${i}`;
      const t0 = performance.now();
      const done = new Promise<number>((resolve) => waiting.set(chain, resolve));
      await queue.add('link', { chain, i: 0, length: opts.length }, jobOpts(`${chain}.0`));
      const t1 = await withTimeout(done, opts.timeoutMs, `raw chain ${chain} to finish`);
      waiting.delete(chain);
      return t1 - t0;
    };
    await lanes(opts.warmup, opts.inFlight, (i) => one('w', i));
    const before = await redisSnapshot(bench);
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    const latencies = await lanes(opts.total, opts.inFlight, (i) => one('m', i));
    const elapsedMs = performance.now() - started;
    const cpu = process.cpuUsage(cpu0);
    const after = await redisSnapshot(bench);
    return {
      runs: opts.total,
      jobsPerRun: opts.length,
      inFlight: opts.inFlight,
      concurrency: opts.concurrency,
      runsPerSec: round((opts.total / elapsedMs) * 1000, 1),
      jobsPerSec: round(((opts.total * opts.length) / elapsedMs) * 1000, 1),
      latencyMs: stats(latencies),
      cpuMsPerRun: {
        workerAndClient: round((cpu.user + cpu.system) / 1000 / opts.total, 3),
        redis: round(((after.cpuSeconds - before.cpuSeconds) * 1000) / opts.total, 3),
      },
    };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    bench.disconnect();
  }
}
