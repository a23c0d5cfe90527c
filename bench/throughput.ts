/**
 * Scenario "throughput": raw BullMQ chained no-op jobs/s vs Baton steps/s on the same Redis.
 *
 * 1. raw: a BullMQ Worker (concurrency C) whose processor adds the next job of its chain;
 *    `chains` chains in parallel, BENCH_RAW_JOBS jobs in total. Counts jobs/s.
 * 2. baton: BENCH_RUNS runs of the 'bench' agent (parallel_streaming, 3 inference rounds, 2
 *    parallel no-op tool calls in each of the first two) created through RunService.createRun
 *    and driven by BatonWorker (steps and tools concurrency C). Steps = inference rounds
 *    completed (3 per run). Variants: one in-process BatonWorker, and k worker processes
 *    (apps/worker/src/main.ts) for each k in BENCH_WORKER_PROCS.
 * 3. profile: a few more runs under MONITOR, to attribute every Redis round trip of a step to a
 *    connection and a command / Lua script (unmeasured: MONITOR slows Redis down).
 * 4. floor (BENCH_FLOOR, on by default): the job model's floor (job-model-floor.ts), sampled
 *    after each raw + in-process Baton pair, and profiled under MONITOR like Baton.
 *
 * Redis work per step comes from INFO commandstats deltas around each measured phase.
 */
import { childCpuSeconds, startChild, workerNodeOptions, type Child } from './child-process.ts';
import { firstKey, keyClass } from './key-classes.ts';
import { floorHarness } from './job-model-floor.ts';
import { bullmqAddrs, classifyClients, monitorCounts, perUnit } from './monitor-counts.ts';
import { floorReport } from './job-model-floor-report.ts';
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Queue, Worker, type ConnectionOptions, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { BatonRuntime, bullPrefix, systemClock, type RedisClient } from '@baton/runtime';
import { DEFAULT_TASK_QUEUE } from '@baton/runtime/internal';
import { BatonWorker, WorkerConfigSchema, type WorkerConfig } from '@baton/worker';
import { BENCH_AGENTS_MODULE, benchAgents } from '@baton/testing/bench-agents';
import {
  budgetCheck,
  BenchError,
  benchClient,
  envInt,
  envIntList,
  mapLimit,
  pollUntil,
  redisDelta,
  redisSnapshot,
  round,
  startMonitor,
  type BenchContext,
  type Scenario,
} from './lib.ts';

const AGENT = 'bench';
const TENANT = 'bench';
const STEPS_PER_RUN = 3;
const silent = pino({ level: 'silent' });
/** The in-process worker's log (BENCH_WORKER_LOG=warn|debug|..., to stderr); silent by default. */
const workerLog = pino({ level: process.env['BENCH_WORKER_LOG'] ?? 'silent' }, pino.destination(2));

interface Knobs {
  readonly runs: number;
  readonly warmupRuns: number;
  readonly rawJobs: number;
  readonly rawWarmupJobs: number;
  readonly chains: number;
  readonly concurrency: number;
  readonly workerProcs: number[];
  readonly profileRuns: number;
  /** Write every command of the profile batch, in order, to this file (debugging). */
  readonly profileTrace: string | undefined;
  readonly timeoutMs: number;
  readonly createParallelism: number;
  readonly repeat: number;
  readonly autoPipelining: boolean;
  /** Measure the job model's floor (job-model-floor.ts) beside raw and Baton. */
  readonly floor: boolean;
  readonly holderNote: boolean;
}

function knobs(): Knobs {
  const runs = envInt('BENCH_RUNS', 300, 1);
  return {
    runs,
    warmupRuns: envInt('BENCH_WARMUP_RUNS', 40, 0),
    rawJobs: envInt('BENCH_RAW_JOBS', 20_000, 1),
    rawWarmupJobs: envInt('BENCH_RAW_WARMUP_JOBS', 2_000, 0),
    chains: envInt('BENCH_CHAINS', runs, 1),
    concurrency: envInt('BENCH_CONCURRENCY', 16, 1),
    workerProcs: envIntList('BENCH_WORKER_PROCS', [2]).filter((k) => k > 0),
    profileRuns: envInt('BENCH_PROFILE_RUNS', 50, 0),
    profileTrace: process.env['BENCH_PROFILE_TRACE'] || undefined,
    timeoutMs: envInt('BENCH_TIMEOUT_MS', 120_000, 1000),
    createParallelism: envInt('BENCH_CREATE_PARALLELISM', 32, 1),
    repeat: envInt('BENCH_REPEAT', 5, 1),
    autoPipelining: process.env['BENCH_AUTOPIPELINING'] === '1',
    floor: process.env['BENCH_FLOOR'] !== '0',
    holderNote: process.env['BENCH_FLOOR_HOLDER_NOTE'] === '1',
  };
}

/** The sample with the median `key` (upper median for even counts) and all values of `key`. */
function medianBy<T extends Record<string, unknown>>(
  samples: readonly T[],
  key: string,
): { median: T; values: number[] } {
  const values = samples.map((x) => x[key] as number);
  const sorted = [...samples].sort((a, b) => (a[key] as number) - (b[key] as number));
  const median = sorted[Math.floor(sorted.length / 2)];
  if (median === undefined) throw new BenchError('no samples');
  return { median, values };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function benchPrefix(label: string): string {
  return `bench-${label}-${randomBytes(3).toString('hex')}`;
}

// ---------------------------------------------------------------------------------------------
// 1. Raw BullMQ chained jobs
// ---------------------------------------------------------------------------------------------

interface Harness<S> {
  readonly label: string;
  /** One timed sample (r numbers the samples). */
  sample(r: number): Promise<S>;
  close(): Promise<void>;
}

interface RawHarness extends Harness<Record<string, unknown>> {
  /** Round trips and commands per job under MONITOR (untimed). */
  profile(jobs: number): Promise<Record<string, unknown>>;
}

async function rawHarness(ctx: BenchContext, url: string, k: Knobs): Promise<RawHarness> {
  const connection: ConnectionOptions = { url, maxRetriesPerRequest: null };
  const prefix = bullPrefix(benchPrefix('raw'));
  const queue = new Queue('raw', { connection, prefix });
  // Same options as Baton's step jobs (explicit ids, retention of completed jobs).
  const opts = (jobId: string): JobsOptions => ({
    jobId,
    attempts: 8,
    backoff: { type: 'exponential', delay: 100 },
    removeOnComplete: { age: 3600, count: 50_000 },
    removeOnFail: { age: 7 * 86_400 },
  });
  interface Link {
    batch: string;
    chain: number;
    i: number;
    length: number;
  }
  let completed = 0;
  let failed: string | undefined;
  const worker = new Worker(
    'raw',
    async (job) => {
      const link = job.data as Link;
      if (link.i + 1 < link.length) {
        const next: Link = { ...link, i: link.i + 1 };
        await queue.add('link', next, opts(`${link.batch}.${link.chain}.${next.i}`));
      }
    },
    { connection, prefix, concurrency: k.concurrency },
  );
  worker.on('completed', () => {
    completed += 1;
  });
  worker.on('failed', (job, err) => {
    failed = `raw job ${job?.id} failed: ${err.message}`;
  });
  worker.on('error', (err) => ctx.log(`raw worker error: ${err.message}`));
  const bench = benchClient(url);
  const close = async (): Promise<void> => {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    bench.disconnect();
  };
  try {
    await worker.waitUntilReady();
    const runChains = async (batch: string, total: number): Promise<number> => {
      const chains = Math.min(k.chains, total);
      const length = Math.ceil(total / chains);
      const target = completed + chains * length;
      await queue.addBulk(
        Array.from({ length: chains }, (_, chain) => ({
          name: 'link',
          data: { batch, chain, i: 0, length } satisfies Link,
          opts: opts(`${batch}.${chain}.0`),
        })),
      );
      await pollUntil(
        async () => {
          if (failed) throw new BenchError(failed);
          return completed >= target;
        },
        k.timeoutMs,
        () => `raw BullMQ chains: ${completed}/${target} jobs completed`,
        2,
      );
      return chains * length;
    };
    if (k.rawWarmupJobs > 0) {
      ctx.log(`raw BullMQ: warm-up ${k.rawWarmupJobs} jobs`);
      await runChains('w', k.rawWarmupJobs);
    }
    ctx.log(
      `raw BullMQ: ${k.rawJobs} chained jobs per sample, ${Math.min(k.chains, k.rawJobs)} chains, concurrency ${k.concurrency}`,
    );
    return {
      label: 'raw BullMQ',
      sample: async (r) => {
        const before = await redisSnapshot(bench);
        const cpu0 = process.cpuUsage();
        const elu0 = performance.eventLoopUtilization();
        const started = performance.now();
        const jobs = await runChains(`m${r}`, k.rawJobs);
        const elapsedMs = performance.now() - started;
        const cpu = process.cpuUsage(cpu0);
        const elu = performance.eventLoopUtilization(elu0);
        const after = await redisSnapshot(bench);
        const jobsPerSec = (jobs / elapsedMs) * 1000;
        ctx.log(`raw BullMQ: sample ${r + 1}: ${round(jobsPerSec, 0)} jobs/s`);
        return {
          jobs,
          elapsedMs: round(elapsedMs, 1),
          jobsPerSec: round(jobsPerSec, 1),
          nodeCpuUtilization: round((cpu.user + cpu.system) / 1000 / elapsedMs),
          nodeCpuUsecPerJob: round((cpu.user + cpu.system) / jobs, 1),
          eventLoopUtilization: round(elu.utilization),
          redisPerJob: redisDelta(before, after, jobs, elapsedMs),
        };
      },
      profile: async (jobs) => {
        const bull = await bullmqAddrs(queue, worker);
        const clients = await classifyClients(bench, (addr, name) =>
          bull.has(addr) || name.startsWith(prefix) ? 'other' : null,
        );
        // Whole chains: the batch can be a little more than `jobs`.
        let ran = 0;
        const counts = await monitorCounts(url, clients, async () => {
          ran = await runChains('p', jobs);
        });
        return perUnit(counts, ran);
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

function summarizeRaw(
  samples: readonly Record<string, unknown>[],
  k: Knobs,
): Record<string, unknown> {
  const { median, values } = medianBy(samples, 'jobsPerSec');
  return {
    chains: Math.min(k.chains, k.rawJobs),
    concurrency: k.concurrency,
    samplesJobsPerSec: values,
    ...median,
  };
}

// ---------------------------------------------------------------------------------------------
// 2. Baton
// ---------------------------------------------------------------------------------------------

function batonConfig(url: string, prefix: string, k: Knobs): WorkerConfig {
  return WorkerConfigSchema.parse({
    REDIS_URL: url,
    BATON_PREFIX: prefix,
    WORKER_CONCURRENCY: String(k.concurrency),
    TOOL_CONCURRENCY: String(k.concurrency),
    // The reconciler's periodic scan is off so it cannot land inside one phase and not another.
    RECONCILER: 'false',
    LOG_LEVEL: 'silent',
  });
}

/** Where the workers of one variant run. */
interface WorkerSet {
  readonly label: string;
  readonly workers: number;
  readonly inProcess: boolean;
  /** The worker, when it runs in this process. */
  readonly worker?: BatonWorker;
  /** CPU seconds of the worker processes (for child processes), if known. */
  cpuSeconds(): Promise<number | undefined>;
  stop(): Promise<void>;
}

async function inProcessWorker(config: WorkerConfig): Promise<WorkerSet> {
  const worker = new BatonWorker({
    config,
    agents: benchAgents(systemClock),
    logger: workerLog,
    clock: systemClock,
  });
  await worker.start();
  return {
    label: '1 BatonWorker in the bench process',
    workers: 1,
    inProcess: true,
    worker,
    cpuSeconds: async () => undefined,
    stop: () => worker.stop(2_000),
  };
}

const WORKER_MAIN = fileURLToPath(new URL('../apps/worker/src/main.ts', import.meta.url));

async function workerProcesses(
  ctx: BenchContext,
  config: WorkerConfig,
  count: number,
  timeoutMs: number,
): Promise<WorkerSet> {
  const children: Child[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(children.map((c) => c.stop()));
  };
  try {
    for (let i = 0; i < count; i += 1)
      children.push(
        await startChild(
          ctx,
          `worker ${i}`,
          WORKER_MAIN,
          {
            REDIS_URL: config.REDIS_URL,
            BATON_PREFIX: config.BATON_PREFIX,
            WORKER_CONCURRENCY: String(config.WORKER_CONCURRENCY),
            TOOL_CONCURRENCY: String(config.TOOL_CONCURRENCY),
            RECONCILER: '0',
            LOG_LEVEL: 'warn',
            BATON_AGENTS: BENCH_AGENTS_MODULE,
            WORKER_ID: `${config.BATON_PREFIX}-w${i}`,
            ...workerNodeOptions(),
          },
          'READY ',
          timeoutMs,
        ),
      );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    label: `${count} worker processes (apps/worker/src/main.ts)`,
    workers: count,
    inProcess: false,
    cpuSeconds: async () => {
      let total = 0;
      for (const child of children) {
        const s = await childCpuSeconds(child);
        if (s === undefined) return undefined;
        total += s;
      }
      return total;
    },
    stop,
  };
}

interface BatchResult {
  readonly runIds: string[];
  readonly elapsedMs: number;
  readonly polls: number;
}

/** Creates `n` runs through RunService.createRun and waits until none of them is active. */
async function runBatch(
  client: BatonRuntime,
  bench: Redis,
  n: number,
  k: Knobs,
  label: string,
): Promise<BatchResult> {
  const activeKey = client.keys.activeRuns;
  let polls = 0;
  const started = performance.now();
  const runIds = await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    k.createParallelism,
    async (i) =>
      (
        await client.service.createRun(TENANT, {
          agent: AGENT,
          input: { messages: [{ role: 'user', content: `bench ${label} ${i}` }] },
        })
      ).runId,
  );
  let left = -1;
  await pollUntil(
    async () => {
      polls += 1;
      left = await bench.zcard(activeKey);
      return left === 0;
    },
    k.timeoutMs,
    () => `${label}: ${left} of ${n} Baton runs still active (not finished)`,
    5,
  );
  return { runIds, elapsedMs: performance.now() - started, polls };
}

/**
 * Every run must have finished naturally; returns the number of inference rounds completed and
 * the mean size of a final checkpoint (what each commit writes and each load reads).
 */
async function verifyRuns(
  client: BatonRuntime,
  runIds: readonly string[],
  label: string,
): Promise<{ steps: number; checkpointBytes: number }> {
  let steps = 0;
  let bytes = 0;
  const problems: string[] = [];
  await mapLimit(runIds, 64, async (runId) => {
    const stored = await client.store.load(runId);
    const cp = stored?.checkpoint;
    if (!cp || cp.status !== 'done' || cp.termination?.kind !== 'natural_end') {
      problems.push(
        `${runId}: ${cp ? `status ${cp.status}, termination ${JSON.stringify(cp.termination)}` : 'missing'}`,
      );
      return;
    }
    steps += cp.messages.filter((m) => m.role === 'assistant').length;
    bytes += Buffer.byteLength(JSON.stringify(cp));
  });
  if (problems.length > 0)
    throw new BenchError(
      `${label}: ${problems.length} of ${runIds.length} runs did not finish naturally, e.g. ${problems.slice(0, 3).join('; ')}`,
    );
  return { steps, checkpointBytes: Math.round(bytes / Math.max(1, runIds.length)) };
}

/**
 * Waits until neither queue has anything runnable left: wake-up jobs enqueued while a run was
 * finishing still run (and cost Redis work) after the run is done. Delayed jobs are not waited
 * for: a step job that finds its run leased parks itself for LEASE_TTL_MS + 100 ms (15 s by
 * default) and comes back as a no-op pass; those are counted instead (parkedStepJobs).
 */
async function drainQueues(client: BatonRuntime, timeoutMs: number): Promise<void> {
  let left = 0;
  await pollUntil(
    async () => {
      const counts = await Promise.all(
        client.queues
          .shardQueues(DEFAULT_TASK_QUEUE)
          .map((q) => q.getJobCounts('wait', 'active', 'prioritized', 'waiting-children')),
      );
      left = counts.reduce((n, c) => n + Object.values(c).reduce((a, b) => a + b, 0), 0);
      return left === 0;
    },
    timeoutMs,
    () => `${left} Baton jobs still queued or running after every run finished`,
    5,
  );
}

interface JobCounts {
  steps: number;
  tools: number;
  failed: number;
  delayedSteps: number;
}

async function jobCounts(client: BatonRuntime): Promise<JobCounts> {
  // A shard queue holds a run's step jobs and their tool children: told apart by `kind`.
  const counts: JobCounts = { steps: 0, tools: 0, failed: 0, delayedSteps: 0 };
  for (const queue of client.queues.shardQueues(DEFAULT_TASK_QUEUE)) {
    const c = await queue.getJobCounts('failed', 'delayed');
    counts.failed += c['failed'] ?? 0;
    counts.delayedSteps += c['delayed'] ?? 0;
    for (const job of await queue.getJobs(['completed'], 0, -1))
      if ((job.data as { kind?: string }).kind === 'tool') counts.tools += 1;
      else counts.steps += 1;
  }
  return counts;
}

interface JobTally {
  /** Step jobs per run by reason (job name; "wake" = unique wake-up job). */
  readonly stepJobsByReason: Record<string, number>;
  /** Step jobs per run by outcome (the processor's return value). */
  readonly stepJobsByOutcome: Record<string, number>;
  /** Failed attempts per run that BullMQ retried (stack traces on completed jobs). */
  readonly retriedAttemptsPerRun: { steps: number; tools: number };
  /** The most common error of those attempts. */
  readonly retryErrors: Record<string, number>;
}

/** All jobs of the given runs, whenever they ran (including wake-ups after the run ended). */
async function jobTally(client: BatonRuntime, runIds: readonly string[]): Promise<JobTally> {
  const wanted = new Set(runIds);
  const byReason: Record<string, number> = {};
  const byOutcome: Record<string, number> = {};
  const retries = { steps: 0, tools: 0 };
  const errors: Record<string, number> = {};
  const perRun = runIds.length;
  for (const queue of client.queues.shardQueues(DEFAULT_TASK_QUEUE)) {
    const jobs = await queue.getJobs(['completed'], 0, -1);
    for (const job of jobs) {
      const kind = (job.data as { kind?: string }).kind === 'tool' ? 'tools' : 'steps';
      const runId = (job.data as { runId?: string }).runId;
      if (runId === undefined || !wanted.has(runId)) continue;
      const failures = job.stacktrace?.length ?? 0;
      retries[kind] += failures;
      if (failures > 0) {
        const firstLine = ((job.stacktrace ?? [])[0] ?? '').split('\n')[0] ?? '';
        errors[firstLine] = (errors[firstLine] ?? 0) + failures;
      }
      if (kind === 'tools') continue;
      const reason = job.id?.startsWith('wake.') ? `${job.name} (wake)` : job.name;
      byReason[reason] = (byReason[reason] ?? 0) + 1;
      const outcome = String(job.returnvalue);
      byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
    }
  }
  const perRunOf = (r: Record<string, number>): Record<string, number> =>
    Object.fromEntries(Object.entries(r).map(([key, v]) => [key, round(v / perRun)]));
  return {
    stepJobsByReason: perRunOf(byReason),
    stepJobsByOutcome: perRunOf(byOutcome),
    retriedAttemptsPerRun: {
      steps: round(retries.steps / perRun),
      tools: round(retries.tools / perRun),
    },
    retryErrors: Object.fromEntries(
      Object.entries(errors)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5),
    ),
  };
}

type BatonSample = Record<string, unknown> & { runIds: string[]; stepsPerSec: number };

interface BatonHarness extends Harness<BatonSample> {
  /** The median sample plus the step-job tally of its runs. */
  summarize(samples: readonly BatonSample[]): Promise<Record<string, unknown>>;
  /** MONITOR breakdown (in-process worker only), untimed. */
  profile(): Promise<Record<string, unknown> | undefined>;
}

async function batonHarness(
  ctx: BenchContext,
  url: string,
  k: Knobs,
  kind: { inProcess: true } | { inProcess: false; processes: number },
): Promise<BatonHarness> {
  const prefix = benchPrefix(kind.inProcess ? 'b1' : `bp${kind.processes}`);
  const config = batonConfig(url, prefix, k);
  const set = kind.inProcess
    ? await inProcessWorker(config)
    : await workerProcesses(ctx, config, kind.processes, k.timeoutMs);
  const client = new BatonRuntime({ config, logger: silent, clock: systemClock });
  if (k.autoPipelining && set.worker) {
    // What-if experiment (BENCH_AUTOPIPELINING=1): batch the commands Baton's own connection
    // issues in one tick into one write. BullMQ's connections are unchanged.
    for (const redis of [set.worker.runtime.redis, client.redis])
      (redis.options as { enableAutoPipelining?: boolean }).enableAutoPipelining = true;
  }
  const bench = benchClient(url);
  const close = async (): Promise<void> => {
    bench.disconnect();
    await set
      .stop()
      .catch((err: unknown) => ctx.log(`stopping workers failed: ${(err as Error).message}`));
    await client.close();
  };
  try {
    if (k.warmupRuns > 0) {
      ctx.log(`baton [${set.label}]: warm-up ${k.warmupRuns} runs`);
      const warm = await runBatch(client, bench, k.warmupRuns, k, 'warm-up');
      await verifyRuns(client, warm.runIds, 'warm-up');
    }
    ctx.log(
      `baton [${set.label}]: ${k.runs} runs x ${STEPS_PER_RUN} steps per sample, concurrency ${k.concurrency} (steps) / ${k.concurrency} (tools)`,
    );
  } catch (error) {
    await close();
    throw error;
  }
  return {
    label: set.label,
    sample: async (r) => {
      const jobs0 = await jobCounts(client);
      const before = await redisSnapshot(bench);
      const cpu0 = process.cpuUsage();
      const elu0 = performance.eventLoopUtilization();
      const workerCpu0 = await set.cpuSeconds();
      // The clock stops when the last run has finished...
      const batch = await runBatch(client, bench, k.runs, k, `baton [${set.label}]`);
      // ...but the work the runs caused (late wake-up jobs) is still counted: CPU, Redis
      // commands and jobs are taken once the queues are idle, and CPU utilisation covers both.
      const drainStarted = performance.now();
      await drainQueues(client, k.timeoutMs);
      const drainMs = performance.now() - drainStarted;
      const workerCpu1 = await set.cpuSeconds();
      const cpu = process.cpuUsage(cpu0);
      const elu = performance.eventLoopUtilization(elu0);
      const after = await redisSnapshot(bench);
      // Everything below is bookkeeping outside the timed window.
      const jobs1 = await jobCounts(client);
      const busyMs = batch.elapsedMs + drainMs;
      const { steps, checkpointBytes } = await verifyRuns(client, batch.runIds, set.label);
      if (steps !== k.runs * STEPS_PER_RUN)
        ctx.log(`warning: expected ${k.runs * STEPS_PER_RUN} inference rounds, counted ${steps}`);
      const stepJobs = jobs1.steps - jobs0.steps;
      const toolJobs = jobs1.tools - jobs0.tools;
      const secs = batch.elapsedMs / 1000;
      const stepsPerSec = steps / secs;
      ctx.log(
        `baton [${set.label}]: sample ${r + 1}: ${round(stepsPerSec, 0)} steps/s, ${round((stepJobs + toolJobs) / secs, 0)} BullMQ jobs/s`,
      );
      return {
        runIds: batch.runIds,
        runs: k.runs,
        steps,
        elapsedMs: round(batch.elapsedMs, 1),
        drainAfterLastRunMs: round(drainMs, 1),
        runsPerSec: round(k.runs / secs, 1),
        stepsPerSec: round(stepsPerSec, 1),
        toolJobsPerSec: round(toolJobs / secs, 1),
        stepJobsPerSec: round(stepJobs / secs, 1),
        bullmqJobsPerSec: round((stepJobs + toolJobs) / secs, 1),
        jobsPerRun: { step: round(stepJobs / k.runs), tool: round(toolJobs / k.runs) },
        failedJobs: jobs1.failed - jobs0.failed,
        // Step jobs that found their run leased and parked for the lease TTL (net of earlier
        // parked jobs that came back during this sample).
        parkedStepJobsPerRun: round((jobs1.delayedSteps - jobs0.delayedSteps) / k.runs),
        finalCheckpointBytes: checkpointBytes,
        benchProcess: {
          note: set.inProcess
            ? 'the worker runs in this process: this is the worker CPU'
            : 'client side only (createRun + completion polling)',
          cpuUtilization: round((cpu.user + cpu.system) / 1000 / busyMs),
          eventLoopUtilization: round(elu.utilization),
          cpuUsecPerStep: round((cpu.user + cpu.system) / steps, 1),
        },
        ...(workerCpu0 !== undefined && workerCpu1 !== undefined
          ? {
              workerProcesses: {
                cpuUtilization: round(((workerCpu1 - workerCpu0) * 1000) / busyMs),
                cpuUsecPerStep: round(((workerCpu1 - workerCpu0) * 1e6) / steps, 1),
              },
            }
          : {}),
        // The bench's own completion polling (ZCARD) is subtracted.
        redisPerStep: redisDelta(before, after, steps, busyMs, { zcard: batch.polls }),
      };
    },
    summarize: async (samples) => {
      const { median, values } = medianBy(samples, 'stepsPerSec');
      const { runIds, ...medianFields } = median;
      return {
        workers: set.label,
        concurrency: { steps: k.concurrency, tools: k.concurrency },
        samplesStepsPerSec: values,
        ...medianFields,
        jobsOfTheseRuns: await jobTally(client, runIds),
      };
    },
    profile: async () =>
      set.worker && k.profileRuns > 0
        ? monitorProfile(ctx, url, client, bench, set.worker, k)
        : undefined,
    close,
  };
}

// ---------------------------------------------------------------------------------------------
// 3. MONITOR profile: every round trip of a step, by connection and command / script
// ---------------------------------------------------------------------------------------------

type ScriptSet = Record<string, { sha: string }>;

/** sha1 -> script name, for Baton's scripts (ioredis defineCommand) and all of BullMQ's. */
function scriptNames(clients: readonly unknown[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of clients) {
    const set = (c as { scriptsSet?: ScriptSet } | undefined)?.scriptsSet ?? {};
    for (const [name, script] of Object.entries(set)) out.set(script.sha, name);
  }
  try {
    // BullMQ's clients are wrapped; read its script table directly (CJS build: plain require).
    const require = createRequire(import.meta.url);
    const bullmqMain = require.resolve('bullmq');
    const scriptsDir = join(
      bullmqMain.slice(0, bullmqMain.lastIndexOf(`${sep}dist${sep}`)),
      'dist',
      'cjs',
      'scripts',
      'index.js',
    );
    const table = require(scriptsDir) as Record<string, { name?: string; content?: string }>;
    for (const script of Object.values(table)) {
      if (typeof script?.content === 'string' && script.name)
        out.set(createHash('sha1').update(script.content).digest('hex'), `bullmq:${script.name}`);
    }
  } catch {
    // unnamed scripts show as their sha prefix
  }
  return out;
}

function localAddr(client: RedisClient): string | undefined {
  // A cluster client has a socket per node, none of its own.
  const stream = 'stream' in client ? client.stream : undefined;
  return stream?.localPort === undefined
    ? undefined
    : `${stream.localAddress ?? '127.0.0.1'}:${stream.localPort}`;
}

async function monitorProfile(
  ctx: BenchContext,
  url: string,
  client: BatonRuntime,
  bench: Redis,
  worker: BatonWorker,
  k: Knobs,
): Promise<Record<string, unknown>> {
  ctx.log(`profile: ${k.profileRuns} runs under MONITOR (not timed)`);
  // Label connections: CLIENT LIST names, plus the ones we can recognise by local address.
  const names = new Map<string, string>();
  const clientList = (await bench.client('LIST')) as string;
  for (const line of clientList.split('\n')) {
    const addr = /\baddr=(\S+)/.exec(line)?.[1];
    const name = /\bname=(\S*)/.exec(line)?.[1];
    if (addr) names.set(addr, name || 'bullmq Worker connections (unnamed)');
  }
  const workerAddr = localAddr(worker.runtime.redis);
  const apiAddr = localAddr(client.redis);
  if (workerAddr) names.set(workerAddr, 'worker: baton (stores, leases, mailbox)');
  if (apiAddr) names.set(apiAddr, 'api: baton (createRun)');
  const benchAddr = localAddr(bench);
  const shas = scriptNames([worker.runtime.redis, client.redis]);
  const scriptName = (args: readonly string[]): string => {
    const cmd = (args[0] ?? '').toLowerCase();
    if (cmd === 'evalsha')
      return `evalsha ${shas.get(args[1] ?? '') ?? (args[1] ?? '').slice(0, 8)}`;
    if (cmd === 'eval')
      return `evalsha ${
        shas.get(
          createHash('sha1')
            .update(args[1] ?? '')
            .digest('hex'),
        ) ?? '(inline script)'
      }`;
    return cmd;
  };
  const label = (source: string): string => {
    const name = names.get(source);
    if (name === undefined) return '(connected later)';
    // BullMQ names its connections "bull:<base64 queue name>" etc.; keep them short.
    return name.length > 60 ? `${name.slice(0, 57)}...` : name;
  };

  const roundTrips = new Map<string, number>();
  const byConnection = new Map<string, number>();
  const byConnectionAndCommand = new Map<string, number>();
  const luaCalls = new Map<string, number>();
  let clientCommands = 0;
  let luaCommands = 0;
  // Whose work a command is: 'baton' = sent on Baton's own connections (stores, leases,
  // mailbox, createRun) or run inside Baton's scripts; 'bullmq' = BullMQ's scripts and
  // everything on BullMQ's connections. MONITOR prints a script's commands right after it.
  const origin = { baton: { roundTrips: 0, commands: 0 }, bullmq: { roundTrips: 0, commands: 0 } };
  let lastOrigin: keyof typeof origin = 'baton';
  const trace: string[] = [];
  const byKeyClass = new Map<string, number>();
  const monitor = await startMonitor(url, ({ source, args }) => {
    if (source === benchAddr) return;
    const cmd = (args[0] ?? '').toLowerCase();
    const touched = firstKey(args);
    if (touched !== null) {
      const cls = keyClass(touched);
      byKeyClass.set(cls, (byKeyClass.get(cls) ?? 0) + 1);
    }
    if (k.profileTrace !== undefined)
      trace.push(
        `${source === 'lua' ? '    lua' : label(source)} | ${source === 'lua' ? args.join(' ').slice(0, 160) : scriptName(args)} ${
          source === 'lua'
            ? ''
            : args
                .slice(cmd.startsWith('eval') ? 2 : 1)
                .join(' ')
                .slice(0, 120)
        }`,
      );
    if (source === 'lua') {
      luaCommands += 1;
      luaCalls.set(cmd, (luaCalls.get(cmd) ?? 0) + 1);
      origin[lastOrigin].commands += 1;
      return;
    }
    if (cmd === 'monitor' || cmd === 'info' || cmd === 'client') return;
    clientCommands += 1;
    const key = scriptName(args);
    const source_ = names.get(source) ?? '';
    lastOrigin =
      !key.startsWith('evalsha bullmq:') &&
      (source_.startsWith('worker: baton') || source_.startsWith('api: baton'))
        ? 'baton'
        : 'bullmq';
    origin[lastOrigin].roundTrips += 1;
    origin[lastOrigin].commands += 1;
    roundTrips.set(key, (roundTrips.get(key) ?? 0) + 1);
    const conn = label(source);
    byConnection.set(conn, (byConnection.get(conn) ?? 0) + 1);
    const both = `${conn} | ${key}`;
    byConnectionAndCommand.set(both, (byConnectionAndCommand.get(both) ?? 0) + 1);
  });
  let batch: BatchResult;
  try {
    batch = await runBatch(client, bench, k.profileRuns, k, 'profile');
    await new Promise((r) => setTimeout(r, 200)); // let the last MONITOR lines arrive
  } finally {
    await monitor.stop();
  }
  if (k.profileTrace !== undefined) await writeFile(k.profileTrace, trace.join('\n') + '\n');
  // The bench's own polling ran on `bench` (excluded above by address).
  const { steps } = await verifyRuns(client, batch.runIds, 'profile');
  const perStep = (m: Map<string, number>, top = 25): Record<string, number> =>
    Object.fromEntries(
      [...m.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, top)
        .map(([key, v]) => [key, round(v / steps)]),
    );
  return {
    runs: k.profileRuns,
    steps,
    note: 'MONITOR over a separate, untimed batch. roundTrips = commands sent by clients (each a network round trip, though ioredis pipelines concurrent ones); luaInternal = commands executed inside scripts.',
    clientRoundTripsPerStep: round(clientCommands / steps),
    luaInternalCommandsPerStep: round(luaCommands / steps),
    perStepByOrigin: {
      baton: {
        roundTrips: round(origin.baton.roundTrips / steps),
        commands: round(origin.baton.commands / steps),
      },
      bullmq: {
        roundTrips: round(origin.bullmq.roundTrips / steps),
        commands: round(origin.bullmq.commands / steps),
      },
    },
    roundTripsPerStep: perStep(roundTrips),
    roundTripsPerStepByConnection: perStep(byConnection),
    roundTripsPerStepByConnectionAndCommand: perStep(byConnectionAndCommand, 40),
    luaInternalPerStep: perStep(luaCalls, 15),
    keyClasses: keyClassShares(byKeyClass, steps),
  };
}

/**
 * Commands per step by the key they touch, and each class's share of all keyed commands. A
 * class without a hash tag (a single global key) stays on one master of a cluster: with M
 * masters it alone is about M × its share of that master's load.
 */
function keyClassShares(
  counts: ReadonlyMap<string, number>,
  steps: number,
): Record<string, { perStep: number; share: number }> {
  const total = [...counts.values()].reduce((a, b) => a + b, 0) || 1;
  return Object.fromEntries(
    [...counts.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([cls, n]) => [cls, { perStep: round(n / steps), share: round(n / total, 4) }]),
  );
}

// ---------------------------------------------------------------------------------------------

/** A JSON field that is a number, else undefined. */
function num(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

/**
 * The per-step budgets of the in-process variant (1 worker): medians of the samples for the
 * timed numbers, exact counts for the rest. Step jobs that do nothing: outcomes busy/missing and
 * wake-up jobs.
 */
function budgetsOf(
  baton: Record<string, unknown> | undefined,
  ratio: Record<string, unknown> | undefined,
  profile: Record<string, unknown> | undefined,
  raw: Record<string, unknown>,
): Record<string, unknown> {
  const redis = baton?.['redisPerStep'] as Record<string, unknown> | undefined;
  const jobs = baton?.['jobsOfTheseRuns'] as
    | { stepJobsByOutcome: Record<string, number>; stepJobsByReason: Record<string, number> }
    | undefined;
  const noop = jobs
    ? round(
        (jobs.stepJobsByOutcome['busy'] ?? 0) +
          (jobs.stepJobsByOutcome['missing'] ?? 0) +
          (jobs.stepJobsByReason['continue (wake)'] ?? 0),
      )
    : undefined;
  const cpu = (baton?.['workerProcesses'] ?? baton?.['benchProcess']) as
    Record<string, unknown> | undefined;
  const usec = (v: unknown): number | undefined => {
    const n = num(v);
    return n === undefined ? undefined : round(n / 1000, 3);
  };
  const why = explain(baton, profile, raw, {
    redisCpuUsecPerStep: num(redis?.['redisCpuUsecPerUnit']),
    workerCpuUsecPerStep: num(cpu?.['cpuUsecPerStep']),
  });
  return {
    note: 'per step of the bench agent, 1 in-process worker (its CPU includes the bench client creating runs); see bench/README.md',
    redisCommandsPerStep: {
      ...budgetCheck(num(redis?.['commandsPerUnit']), 80),
      why: why.commands,
    },
    clientRoundTripsPerStep: {
      ...budgetCheck(num(profile?.['clientRoundTripsPerStep']), 12),
      why: why.roundTrips,
    },
    noopStepJobsPerRun: budgetCheck(noop, 0.1),
    redisCpuMsPerStep: {
      ...budgetCheck(usec(redis?.['redisCpuUsecPerUnit']), 0.4),
      why: why.redisCpu,
    },
    workerCpuMsPerStep: {
      ...budgetCheck(usec(cpu?.['cpuUsecPerStep']), 0.6),
      why: why.workerCpu,
    },
    stepsPerSecOverRawJobsPerSec: {
      ...budgetCheck(num(ratio?.['stepsPerSecOverRawJobsPerSec']), 0.3, 'min'),
      why: why.ratio,
    },
  };
}

/**
 * What each budget is made of, from numbers of the same run, so a budget that fails shows where
 * its cost sits: BullMQ's own share next to Baton's, BullMQ's floor (the raw baseline's cost per
 * job times the jobs a step needs), the CPU costs as multiples of a raw job's (comparable across
 * machines, unlike milliseconds), and the step ratio each CPU alone would allow at full use.
 */
function explain(
  baton: Record<string, unknown> | undefined,
  profile: Record<string, unknown> | undefined,
  raw: Record<string, unknown>,
  cpu: { redisCpuUsecPerStep: number | undefined; workerCpuUsecPerStep: number | undefined },
): Record<'commands' | 'roundTrips' | 'redisCpu' | 'workerCpu' | 'ratio', Record<string, unknown>> {
  const jobs = baton?.['jobsPerRun'] as { step: number; tool: number } | undefined;
  const jobsPerStep = jobs ? (jobs.step + jobs.tool) / STEPS_PER_RUN : undefined;
  const rawRedis = raw['redisPerJob'] as Record<string, unknown> | undefined;
  const rawCommands = num(rawRedis?.['commandsPerUnit']);
  const rawRedisUsec = num(rawRedis?.['redisCpuUsecPerUnit']);
  const rawNodeUsec = num(raw['nodeCpuUsecPerJob']);
  const rawJobsPerSec = num(raw['jobsPerSec']);
  const origin = profile?.['perStepByOrigin'] as
    Record<'baton' | 'bullmq', { roundTrips: number; commands: number }> | undefined;
  const times = (a: number | undefined, b: number | undefined): number | null =>
    a === undefined || b === undefined ? null : round(a * b, 1);
  const over = (a: number | undefined, b: number | undefined): number | null =>
    a === undefined || b === undefined || b === 0 ? null : round(a / b, 2);
  // Steps/s if this CPU alone were the limit at 100 % of one core, over raw jobs/s.
  const bound = (usecPerStep: number | undefined): number | null =>
    usecPerStep === undefined || rawJobsPerSec === undefined || usecPerStep === 0
      ? null
      : round(1e6 / usecPerStep / rawJobsPerSec, 3);
  const budgetUsec = (ratio: number): number | null =>
    rawJobsPerSec === undefined ? null : round(1e6 / (ratio * rawJobsPerSec), 1);
  return {
    commands: {
      baton: origin?.baton.commands ?? null,
      bullmq: origin?.bullmq.commands ?? null,
      bullmqJobsPerStep: jobsPerStep === undefined ? null : round(jobsPerStep, 2),
      rawBullmqCommandsPerJob: rawCommands ?? null,
      bullmqFloorPerStep: times(rawCommands, jobsPerStep),
    },
    roundTrips: {
      baton: origin?.baton.roundTrips ?? null,
      bullmq: origin?.bullmq.roundTrips ?? null,
    },
    redisCpu: {
      rawBullmqUsecPerJob: rawRedisUsec ?? null,
      stepOverRawJob: over(cpu.redisCpuUsecPerStep, rawRedisUsec),
    },
    workerCpu: {
      rawBullmqUsecPerJob: rawNodeUsec ?? null,
      stepOverRawJob: over(cpu.workerCpuUsecPerStep, rawNodeUsec),
    },
    ratio: {
      rawJobsPerSec: rawJobsPerSec ?? null,
      ifRedisCpuBound: bound(cpu.redisCpuUsecPerStep),
      ifWorkerCpuBound: bound(cpu.workerCpuUsecPerStep),
      usecPerStepFor0_3: budgetUsec(0.3),
    },
  };
}

export const throughput: Scenario = {
  name: 'throughput',
  description:
    'raw BullMQ chained no-op jobs/s vs Baton steps/s (bench agent) on the same Redis, plus Redis work per step',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('throughput needs Redis');
    const k = knobs();
    // Raw and Baton samples alternate (raw, baton, raw, baton, ...) so that drift in the
    // machine's load (other processes) hits both sides; ratios are medians of per-pair ratios.
    const raw = await rawHarness(ctx, url, k);
    const floor = k.floor
      ? await floorHarness(ctx, url, k).catch(async (error: unknown) => {
          await raw.close();
          throw error;
        })
      : undefined;
    const pairs: {
      raw: Record<string, unknown>;
      baton: BatonSample;
      floor?: Record<string, unknown>;
    }[] = [];
    let floorProfile: Record<string, unknown> | undefined;
    let rawProfile: Record<string, unknown> | undefined;
    const rawSamples: Record<string, unknown>[] = [];
    const baton: Record<string, unknown>[] = [];
    const ratios: Record<string, unknown>[] = [];
    let profile: Record<string, unknown> | undefined;
    let n = 0;
    try {
      const kinds = [
        { inProcess: true as const },
        ...k.workerProcs.map((processes) => ({ inProcess: false as const, processes })),
      ];
      for (const kind of kinds) {
        const h = await batonHarness(ctx, url, k, kind);
        try {
          const samples: BatonSample[] = [];
          const stepRatios: number[] = [];
          const jobRatios: number[] = [];
          for (let r = 0; r < k.repeat; r += 1) {
            const rs = await raw.sample(n++);
            const bs = await h.sample(r);
            // The floor's samples alternate with the in-process worker's (same window).
            const fs = floor && kind.inProcess ? await floor.sample(r) : undefined;
            if (kind.inProcess) pairs.push({ raw: rs, baton: bs, ...(fs ? { floor: fs } : {}) });
            rawSamples.push(rs);
            samples.push(bs);
            stepRatios.push(bs.stepsPerSec / (rs['jobsPerSec'] as number));
            jobRatios.push((bs['bullmqJobsPerSec'] as number) / (rs['jobsPerSec'] as number));
          }
          const result = await h.summarize(samples);
          baton.push(result);
          ratios.push({
            workers: h.label,
            stepsPerSecOverRawJobsPerSec: round(median(stepRatios), 3),
            bullmqJobsPerSecOverRawJobsPerSec: round(median(jobRatios), 3),
            perPairStepRatios: stepRatios.map((x) => round(x, 3)),
          });
          profile ??= await h.profile();
          if (kind.inProcess && k.profileRuns > 0) {
            floorProfile = await floor?.profile();
            rawProfile = await raw.profile(k.profileRuns * STEPS_PER_RUN * 5);
          }
        } finally {
          await h.close();
        }
      }
    } finally {
      await floor?.close();
      await raw.close();
    }
    return {
      budgets: budgetsOf(baton[0], ratios[0], profile, summarizeRaw(rawSamples, k)),
      config: {
        runs: k.runs,
        warmupRuns: k.warmupRuns,
        rawJobs: k.rawJobs,
        rawWarmupJobs: k.rawWarmupJobs,
        chains: Math.min(k.chains, k.rawJobs),
        concurrency: k.concurrency,
        workerProcesses: k.workerProcs,
        repeat: k.repeat,
        ...(k.autoPipelining
          ? {
              experiment:
                'BENCH_AUTOPIPELINING=1: ioredis enableAutoPipelining on the Baton connections of the in-process worker',
            }
          : {}),
        agent: `${AGENT} (parallel_streaming, ${STEPS_PER_RUN} inference rounds, 2 parallel no-op tools in rounds 1-2, instant scripted model)`,
        reconciler: 'off',
      },
      ...(floor
        ? {
            jobModelFloor: floorReport({
              pairs,
              rawProfile,
              floorProfile,
              batonProfile: profile,
              batonJobsPerRun: baton[0]?.['jobsPerRun'],
              holderNote: k.holderNote,
            }),
          }
        : {}),
      raw: summarizeRaw(rawSamples, k),
      baton,
      ratios,
      ...(profile ? { profile } : {}),
    };
  },
};
