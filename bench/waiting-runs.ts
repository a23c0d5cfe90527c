/**
 * Scenario "waiting-runs": N runs (default 2,000) parked on an approval. What does a waiting run
 * cost? Redis bytes per waiting run (INFO memory used_memory delta over the parking, after the
 * queues drained, and MEMORY USAGE of every key the stack wrote, grouped by key shape with the
 * ids masked), BullMQ jobs held (waiting/active/delayed/prioritized/waiting-children jobs of the
 * stack's queues, from GET /metrics: must be 0, a waiting run holds no job), and decision →
 * resume latency on some of them while all the others keep waiting.
 */
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { metricSamples, stackKnobs, startStack, type Client, type Stack } from './http-stack.ts';
import { BenchError, benchClient, envInt, pollUntil, round, sleep, type Scenario } from './lib.ts';
import { parkRuns, resumeOne, ticketOf, waitingRuns } from './parked-runs.ts';
import { stats, statsRatio, type Stats } from './stats.ts';

const HELD_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'];
const ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

function knobs() {
  return {
    runs: envInt('BENCH_WAITING_RUNS', 2000, 1),
    decisions: envInt('BENCH_WAITING_DECISIONS', 20, 0),
    parallelism: envInt('BENCH_CREATE_PARALLELISM', 32, 1),
    runTimeoutMs: envInt('BENCH_DECISION_RUN_TIMEOUT_MS', 30_000, 100),
    ...stackKnobs(),
  };
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? Number.NaN);
}

/** Jobs by state of every queue of the stack (from the API's own gauge). */
async function jobCounts(c: Client, timeoutMs: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [labels, value] of await metricSamples(c, 'baton_queue_jobs', timeoutMs)) {
    const state = /state="([^"]+)"/.exec(labels)?.[1] ?? '?';
    out[state] = (out[state] ?? 0) + value;
  }
  return out;
}

/** MEMORY USAGE of every key under the stack's prefixes, grouped by shape (ids masked). */
async function keyBytes(
  redis: Redis,
  prefix: string,
): Promise<{
  keys: number;
  bytes: number;
  byShape: Record<string, { keys: number; bytes: number }>;
}> {
  const byShape = new Map<string, { keys: number; bytes: number }>();
  let keys = 0;
  let bytes = 0;
  for (const match of [`${prefix}:*`, `{${prefix}-bull}*`, `${prefix}-bull:*`]) {
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      if (batch.length === 0) continue;
      const pipeline = redis.pipeline();
      for (const key of batch) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
      const sizes = (await pipeline.exec()) ?? [];
      batch.forEach((key, i) => {
        const size = Number(sizes[i]?.[1] ?? 0);
        // Job ids and hash keys of BullMQ carry the run id; other numeric ids too.
        const shape = key
          .replace(ID, '<id>')
          .replace(/\.[0-9a-f]{6,}$/, '.<hash>')
          .replace(/:\d+$/, ':<n>');
        const entry = byShape.get(shape) ?? { keys: 0, bytes: 0 };
        entry.keys += 1;
        entry.bytes += size;
        byShape.set(shape, entry);
        keys += 1;
        bytes += size;
      });
    } while (cursor !== '0');
  }
  const sorted = [...byShape].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 25);
  return { keys, bytes, byShape: Object.fromEntries(sorted) };
}

export const waitingRunsScenario: Scenario = {
  name: 'waiting-runs',
  description:
    'N runs parked on an approval: Redis bytes per waiting run, BullMQ jobs held (must be 0), decision -> resume latency',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('waiting-runs needs Redis');
    const k = knobs();
    const redis = benchClient(url, 'bench-waiting-runs');
    let stack: Stack | undefined;
    try {
      stack = await startStack(ctx, url, {
        label: 'waiting',
        logLevel: k.logLevel,
        startTimeoutMs: k.startTimeoutMs,
      });
      const { client, prefix } = stack;
      const timeoutMs = Math.max(k.runTimeoutMs, k.startTimeoutMs);
      const mem0 = await usedMemory(redis);
      const keys0 = await keyBytes(redis, prefix);
      ctx.log(`parking ${k.runs} bench-approval runs`);
      const t0 = performance.now();
      const runIds = await parkRuns(client, k.runs, {
        parallelism: k.parallelism,
        directive: { deltas: 1 },
        timeoutMs,
        log: (m) => ctx.log(m),
      });
      const parkMs = performance.now() - t0;
      // Parked means counted as waiting; the step job that parked it may still be completing.
      let held: Record<string, number> = {};
      await pollUntil(
        async () => {
          held = await jobCounts(client, timeoutMs);
          return HELD_STATES.every((s) => (held[s] ?? 0) === 0);
        },
        5_000,
        () => `queues to drain: ${JSON.stringify(held)}`,
        100,
      ).catch(() => undefined); // reported below: a held job is a finding, not a bench failure
      await sleep(200);
      const mem1 = await usedMemory(redis);
      const keys1 = await keyBytes(redis, prefix);
      const waiting = await waitingRuns(client, timeoutMs);
      const jobsHeld = HELD_STATES.reduce((n, s) => n + (held[s] ?? 0), 0);
      ctx.log(`${waiting} waiting, ${jobsHeld} jobs held, ${round((mem1 - mem0) / k.runs)} B/run`);

      let resume: { toFirstEventMs: Stats; toFinishedMs: Stats } | undefined;
      if (k.decisions > 0) {
        ctx.log(`${k.decisions} decisions among ${k.runs} waiting runs, one at a time`);
        const samples = [];
        // Spread over the parked runs: first, middle and last created alike.
        const step = Math.max(1, Math.floor(runIds.length / k.decisions));
        for (let i = 0; i < k.decisions && i * step < runIds.length; i += 1) {
          const runId = runIds[i * step] as string;
          samples.push(
            await resumeOne(client, runId, await ticketOf(client, runId, timeoutMs), timeoutMs),
          );
        }
        resume = {
          toFirstEventMs: stats(samples.map((s) => s.toFirstEventMs)),
          toFinishedMs: stats(samples.map((s) => s.toFinishedMs)),
        };
      }
      const fewWaiting = ctx.results['decision-latency'] as
        { decisionToFirstEventMs?: Stats } | undefined;
      return {
        config: {
          runs: k.runs,
          decisions: k.decisions,
          agent: 'bench-approval (round 1 calls an approval-gated tool; the run parks)',
          memory:
            'usedMemoryPerRun = INFO memory used_memory after all runs are counted waiting and the queues drained, minus before creating them, over the runs; keyBytes = MEMORY USAGE (SAMPLES 0) of every key under the stack prefix and its BullMQ prefix, ids masked; completed step jobs stay until JOB_RETENTION_SECONDS (default 1 h) and are counted',
          jobsHeld: `jobs in states ${HELD_STATES.join(', ')} of every queue (GET /metrics baton_queue_jobs)`,
        },
        runsCountedWaiting: waiting,
        parkSeconds: round(parkMs / 1000, 2),
        usedMemoryPerRunBytes: round((mem1 - mem0) / k.runs, 0),
        keyBytesPerRun: round((keys1.bytes - keys0.bytes) / k.runs, 0),
        keysPerRun: round((keys1.keys - keys0.keys) / k.runs, 2),
        keyBytesByShape: Object.fromEntries(
          Object.entries(keys1.byShape).map(([shape, v]) => [
            shape,
            { keysPerRun: round(v.keys / k.runs, 2), bytesPerRun: round(v.bytes / k.runs, 0) },
          ]),
        ),
        bullmqJobsHeld: jobsHeld,
        bullmqJobsByState: held,
        ...(resume
          ? {
              decisionWithOthersWaiting: resume,
              ...(fewWaiting?.decisionToFirstEventMs
                ? {
                    ratioToDecisionLatencyScenario: statsRatio(
                      resume.toFirstEventMs,
                      fewWaiting.decisionToFirstEventMs,
                    ),
                  }
                : {}),
            }
          : {}),
      };
    } finally {
      await stack?.stop();
      redis.disconnect();
    }
  },
};
