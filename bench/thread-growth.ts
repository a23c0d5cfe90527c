/**
 * Scenario "thread-growth": what a commit costs as a thread grows. For each thread length L
 * (default 0, 50, 200, 1,000 messages) a fresh thread is filled to L messages through the API's
 * thread mechanism (runs on the thread, up to 99 user messages of BENCH_THREAD_MESSAGE_CHARS
 * characters plus one assistant reply each), then one `bench` run (3 inference rounds, 2 parallel
 * no-op tools in rounds 1-2) runs on it alone and is measured: bytes clients sent to Redis (INFO
 * stats total_net_input_bytes delta, minus the idle rate of the stack times the run's duration)
 * and Redis commands per inference round, step time (step.started → step.finished from the
 * events' `at`), submit → run.finished, and the bytes of the run's keys afterwards (MEMORY USAGE
 * of the keys with its hash tag). Ratios are against length 0. Nothing asserts on timings.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import {
  meanStepMs,
  mustGet,
  stackKnobs,
  startStack,
  submitAndFollow,
  type Client,
  type Stack,
} from './http-stack.ts';
import {
  BenchError,
  benchClient,
  envInt,
  envIntList,
  redisSnapshot,
  round,
  sleep,
  startMonitor,
  type Scenario,
} from './lib.ts';
import { mean, median } from './stats.ts';

const MEASURED_AGENT = 'bench';
const STEPS_PER_RUN = 3;
/** User messages per seeding run: with its reply, 100 messages (the default MAX_INPUT_MESSAGES). */
const PER_SEED_RUN = 99;

function knobs() {
  return {
    lengths: envIntList('BENCH_THREAD_LENGTHS', [0, 50, 200, 1000]),
    samples: envInt('BENCH_THREAD_SAMPLES', 3, 1),
    warmupRuns: envInt('BENCH_THREAD_WARMUP_RUNS', 5, 0),
    messageChars: envInt('BENCH_THREAD_MESSAGE_CHARS', 200, 1),
    runTimeoutMs: envInt('BENCH_DECISION_RUN_TIMEOUT_MS', 30_000, 100),
    ...stackKnobs(),
  };
}

/** Fills a new thread to `length` messages (or one more, when only one would be left). */
async function seedThread(
  c: Client,
  threadId: string,
  length: number,
  chars: number,
  timeoutMs: number,
): Promise<number> {
  const filler = 'x'.repeat(chars);
  let have = 0;
  while (have < length) {
    const users = Math.max(1, Math.min(PER_SEED_RUN, length - have - 1));
    const messages = [
      ...Array.from({ length: users - 1 }, () => ({ role: 'user', content: filler })),
      { role: 'user', content: JSON.stringify({ deltas: 1 }) }, // bench-streaming: one word
    ];
    await submitAndFollow(
      c,
      { agent: 'bench-streaming', threadId, input: { messages } },
      timeoutMs,
    );
    have += users + 1;
  }
  if (length === 0) return 0;
  // GET /v1/threads/:id answers pages: counted over all of them
  let count = 0;
  let cursor: string | null | undefined = undefined;
  do {
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page: { messages: unknown[]; nextCursor?: string | null } = await mustGet(
      c,
      `/v1/threads/${encodeURIComponent(threadId)}?limit=1000${query}`,
      timeoutMs,
    );
    count += page.messages.length;
    cursor = page.nextCursor;
  } while (typeof cursor === 'string');
  return count;
}

/** MEMORY USAGE of every key of one run (its hash tag), layout-independent. */
async function runKeyBytes(redis: Redis, prefix: string, runId: string): Promise<number> {
  let cursor = '0';
  let bytes = 0;
  do {
    const [next, keys] = await redis.scan(
      cursor,
      'MATCH',
      `${prefix}:{run:${runId}}*`,
      'COUNT',
      1000,
    );
    cursor = next;
    for (const key of keys)
      bytes += Number((await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
  } while (cursor !== '0');
  return bytes;
}

/**
 * Bytes of the run-commit script calls (`EVALSHA <sha> <5|8> <run keys…> <argv…>`, recognised by
 * their first key, the run's `:cp` key, and the messages mode in ARGV[13]) made while `work`
 * runs, for the run it returns.
 */
async function commitBytes(
  ctx: { log: (m: string) => void },
  url: string,
  work: () => Promise<{ runId: string }>,
): Promise<{ count: number; bytes: number; max: number }> {
  const calls: { cpKey: string; bytes: number }[] = [];
  const monitor = await startMonitor(url, ({ source, args }) => {
    const numKeys = Number(args[2]);
    if (source === 'lua' || (args[0] ?? '').toLowerCase() !== 'evalsha') return;
    if (numKeys !== 5 && numKeys !== 8) return;
    if (!(args[3] ?? '').endsWith(':cp')) return;
    const mode = args[3 + numKeys + 12];
    if (mode !== 'append' && mode !== 'replace') return;
    calls.push({
      cpKey: args[3] ?? '',
      bytes: args.reduce((n, a) => n + Buffer.byteLength(a), 0),
    });
  });
  let runId: string;
  try {
    ({ runId } = await work());
    await sleep(100); // the last MONITOR lines
  } finally {
    await monitor.stop();
  }
  const mine = calls.filter((c) => c.cpKey.includes(`{run:${runId}}`));
  if (mine.length === 0) ctx.log(`warning: no commit of run ${runId} seen under MONITOR`);
  return {
    count: mine.length,
    bytes: mine.reduce((n, c) => n + c.bytes, 0),
    max: mine.reduce((n, c) => Math.max(n, c.bytes), 0),
  };
}

export const threadGrowth: Scenario = {
  name: 'thread-growth',
  description:
    'bytes written to Redis per inference round and step time of a run on threads of 0, 50, 200, 1000 messages',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('thread-growth needs Redis');
    const k = knobs();
    const redis = benchClient(url, 'bench-thread-growth');
    let stack: Stack | undefined;
    try {
      stack = await startStack(ctx, url, {
        label: 'thread',
        logLevel: k.logLevel,
        startTimeoutMs: k.startTimeoutMs,
      });
      const { client, prefix } = stack;
      const timeoutMs = Math.max(k.runTimeoutMs, k.startTimeoutMs);
      // Warm-up (JIT, scripts loaded) and the stack's idle Redis traffic (heartbeats, pollers).
      for (let i = 0; i < k.warmupRuns; i += 1) {
        const threadId = `tg-warm-${i}-${randomBytes(4).toString('hex')}`;
        await seedThread(client, threadId, 50, k.messageChars, timeoutMs);
        await submitAndFollow(
          client,
          {
            agent: MEASURED_AGENT,
            threadId,
            input: { messages: [{ role: 'user', content: 'warm-up' }] },
          },
          timeoutMs,
        );
      }
      const idle0 = await redisSnapshot(redis);
      await sleep(1_000);
      const idle1 = await redisSnapshot(redis);
      const idleInPerMs = (idle1.netInBytes - idle0.netInBytes) / 1_000;
      const rows: Record<string, number>[] = [];
      for (const length of k.lengths) {
        const samples: Record<string, number>[] = [];
        for (let s = 0; s < k.samples; s += 1) {
          const threadId = `tg-${length}-${s}-${randomBytes(4).toString('hex')}`;
          const actual = await seedThread(client, threadId, length, k.messageChars, timeoutMs);
          const before = await redisSnapshot(redis);
          const t = performance.now();
          const run = await submitAndFollow(
            client,
            {
              agent: MEASURED_AGENT,
              threadId,
              input: { messages: [{ role: 'user', content: 'measure' }] },
            },
            timeoutMs,
          );
          // The last commits' bytes are in once run.finished was published.
          const after = await redisSnapshot(redis);
          const ms = performance.now() - t;
          const bytesIn = after.netInBytes - before.netInBytes - idleInPerMs * ms;
          samples.push({
            threadMessages: actual,
            bytesToRedisPerStep: bytesIn / STEPS_PER_RUN,
            bytesFromRedisPerStep: (after.netOutBytes - before.netOutBytes) / STEPS_PER_RUN,
            commandsPerStep: (after.totalCommands - before.totalCommands) / STEPS_PER_RUN,
            redisCpuUsecPerStep: ((after.cpuSeconds - before.cpuSeconds) * 1e6) / STEPS_PER_RUN,
            stepMs: meanStepMs(run.received),
            runMs: run.finishedAt - run.t0,
            runKeyBytes: await runKeyBytes(redis, prefix, run.runId),
          });
        }
        // One more run on a thread of the same length, untimed, under MONITOR: the bytes each
        // commit of the run sends (every argument of the commit script: checkpoint, messages,
        // events) — what a commit writes, with nobody else's traffic in it.
        const commits = await commitBytes(ctx, url, async () => {
          const threadId = `tg-${length}-monitor-${randomBytes(4).toString('hex')}`;
          await seedThread(client, threadId, length, k.messageChars, timeoutMs);
          return submitAndFollow(
            client,
            {
              agent: MEASURED_AGENT,
              threadId,
              input: { messages: [{ role: 'user', content: 'measure' }] },
            },
            timeoutMs,
          );
        });
        const med = (key: string): number => median(samples.map((x) => x[key] as number));
        const row = {
          length,
          threadMessages: med('threadMessages'),
          bytesToRedisPerStep: round(med('bytesToRedisPerStep'), 0),
          bytesFromRedisPerStep: round(med('bytesFromRedisPerStep'), 0),
          commandsPerStep: round(med('commandsPerStep'), 1),
          redisCpuUsecPerStep: round(med('redisCpuUsecPerStep'), 0),
          stepMs: round(med('stepMs'), 2),
          stepMsMean: round(mean(samples.map((x) => x['stepMs'] as number)), 2),
          runMs: round(med('runMs'), 2),
          runKeyBytes: round(med('runKeyBytes'), 0),
          commitsPerRun: commits.count,
          bytesPerCommitMean: commits.count ? round(commits.bytes / commits.count, 0) : 0,
          bytesPerCommitMax: commits.max,
        };
        ctx.log(
          `length ${length}: ${row.bytesToRedisPerStep} B/step to Redis, step ${row.stepMs} ms`,
        );
        rows.push(row);
      }
      const base = rows[0];
      const ratio = (row: Record<string, number>, key: string): number | null =>
        base && base[key] ? round((row[key] as number) / base[key], 2) : null;
      return {
        config: {
          lengths: k.lengths,
          samplesPerLength: k.samples,
          warmupRuns: k.warmupRuns,
          messageChars: k.messageChars,
          seeding: `each sample gets a fresh thread, filled through POST /v1/runs {threadId} with runs of up to ${PER_SEED_RUN} user messages of messageChars characters + 1 assistant reply (bench-streaming, one word); threadMessages = GET /v1/threads/:id messages`,
          measured: `one ${MEASURED_AGENT} run (${STEPS_PER_RUN} inference rounds, 2 parallel no-op tools in rounds 1-2) on the thread, alone; per-step values = run total / ${STEPS_PER_RUN}; medians over the samples`,
          bytesToRedis: `INFO stats total_net_input_bytes delta from before POST to after the run.finished frame (every client: API, worker, bench), minus the stack's idle rate (${round(idleInPerMs * 1000, 0)} B/s) times the run's duration`,
          runKeyBytes:
            "MEMORY USAGE of every key with the run's hash tag after it finished (checkpoint + event stream)",
        },
        idleBytesToRedisPerSec: round(idleInPerMs * 1000, 0),
        byLength: rows,
        ratiosToLength0: rows.map((row) => ({
          length: row['length'],
          bytesToRedisPerStep: ratio(row, 'bytesToRedisPerStep'),
          commandsPerStep: ratio(row, 'commandsPerStep'),
          stepMs: ratio(row, 'stepMs'),
          runMs: ratio(row, 'runMs'),
          runKeyBytes: ratio(row, 'runKeyBytes'),
        })),
      };
    } finally {
      await stack?.stop();
      redis.disconnect();
    }
  },
};
