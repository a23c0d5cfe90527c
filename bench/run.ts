/**
 * Benchmark runner: `npm run -s bench [-- --scenario=<name>[,<name>…]] [--out=<file>] [--list]`.
 *
 * Starts an isolated Redis when a selected scenario needs one (REDIS_URL if set, else a private
 * redis-server on a free port via @baton/testing/redis (packages/testing/src/redis.ts); never the shared 6379 implicitly), runs
 * the scenarios of bench/scenarios.ts in order, and prints ONE JSON document on stdout:
 *   { machine: {cpus, node, …}, redis: {source}, scenarios: { <name>: result, … } }
 * Progress goes to stderr. A scenario that fails is recorded as `{ failed: <message> }` and the
 * rest still run; the exit code is then 1 with a message naming the failures (0 otherwise). Nothing here asserts on timings: it measures.
 *
 * Knobs (env): BENCH_RUNS, BENCH_WARMUP_RUNS, BENCH_RAW_JOBS, BENCH_RAW_WARMUP_JOBS,
 * BENCH_CHAINS, BENCH_CONCURRENCY, BENCH_WORKER_PROCS, BENCH_PROFILE_RUNS, BENCH_TIMEOUT_MS,
 * BENCH_CREATE_PARALLELISM, and each HTTP scenario's own (see bench/README.md).
 */
import { writeFile } from 'node:fs/promises';
import { startRedis, type RedisHandle } from '@baton/testing/redis';
import { BenchError, machine, progress, round, type BenchContext } from './lib.ts';
import { scenarios } from './scenarios.ts';

function usage(): string {
  return [
    'usage: npm run -s bench -- [--scenario=<name>[,<name>...]] [--out=<file>] [--list]',
    '  (-s keeps npm from printing its banner into the JSON on stdout)',
    'scenarios:',
    ...scenarios.map((s) => `  ${s.name.padEnd(18)} ${s.description}`),
  ].join('\n');
}

interface Args {
  readonly selected: typeof scenarios;
  /** Also write the JSON document to this file (--out=<file>, or BENCH_OUT). */
  readonly out: string | undefined;
}

function parseArgs(argv: readonly string[]): Args {
  let names: string[] | undefined;
  let out = process.env['BENCH_OUT'] || undefined;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === '--list' || arg === '--help' || arg === '-h') {
      process.stderr.write(`${usage()}\n`);
      process.exit(0);
    }
    const o = /^--out(?:=(.*))?$/.exec(arg);
    if (o) {
      out = o[1] ?? argv[++i];
      if (out === undefined || out === '')
        throw new BenchError(`--out needs a file name\n${usage()}`);
      continue;
    }
    const m = /^--scenario(?:=(.*))?$/.exec(arg);
    if (!m) throw new BenchError(`unknown argument "${arg}"\n${usage()}`);
    const value = m[1] ?? argv[++i];
    if (value === undefined || value === '')
      throw new BenchError(`--scenario needs a name\n${usage()}`);
    names = [
      ...(names ?? []),
      ...value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ];
  }
  if (names === undefined) return { selected: scenarios, out };
  const unknown = names.filter((n) => !scenarios.some((s) => s.name === n));
  if (unknown.length > 0)
    throw new BenchError(`unknown scenario ${unknown.map((n) => `"${n}"`).join(', ')}\n${usage()}`);
  return { selected: scenarios.filter((s) => names.includes(s.name)), out };
}

async function main(): Promise<void> {
  const { selected, out } = parseArgs(process.argv.slice(2));
  let redis: RedisHandle | undefined;
  const results: Record<string, unknown> = {};
  const failures: string[] = [];
  const started = Date.now();
  const loadAtStart = machine()['loadAverage1m'];
  try {
    if (selected.some((s) => s.needsRedis)) {
      redis = await startRedis({ allowContainers: true });
      progress(`redis: ${redis.source} ${redis.url}`);
    }
    for (const scenario of selected) {
      progress(`scenario ${scenario.name}: ${scenario.description}`);
      const t0 = Date.now();
      const ctx: BenchContext = {
        redisUrl: redis?.url,
        results,
        log: (m) => progress(`${scenario.name}: ${m}`),
      };
      try {
        results[scenario.name] = await scenario.run(ctx);
        progress(`scenario ${scenario.name} done in ${round((Date.now() - t0) / 1000, 1)} s`);
      } catch (error) {
        // The other scenarios still run and print: a long bench that fails late keeps what it
        // measured. The exit code says it failed.
        const message = (error as Error).message;
        failures.push(`scenario "${scenario.name}" failed: ${message}`);
        results[scenario.name] = { failed: message };
        progress(`scenario ${scenario.name} FAILED after ${round((Date.now() - t0) / 1000, 1)} s`);
        if (!(error instanceof BenchError) && (error as Error).stack)
          progress((error as Error).stack ?? '');
      }
    }
  } finally {
    await redis
      ?.stop()
      .catch((err: unknown) => progress(`stopping redis failed: ${(err as Error).message}`));
  }
  const doc = {
    machine: { ...machine(), loadAverage1mAtStart: loadAtStart },
    ...(redis ? { redis: { source: redis.source } } : {}),
    totalSeconds: round((Date.now() - started) / 1000, 1),
    scenarios: results,
  };
  const json = `${JSON.stringify(doc, null, 2)}\n`;
  process.stdout.write(json);
  if (out !== undefined) {
    await writeFile(out, json);
    progress(`results written to ${out}`);
  }
  if (failures.length > 0) throw new BenchError(failures.join('; '));
}

main().then(
  // Lingering sockets or timers of a library must not keep a finished bench alive.
  () => process.exit(0),
  (error: unknown) => {
    const err = error as Error;
    process.stderr.write(`\nbench failed: ${err.message}\n`);
    if (!(err instanceof BenchError) && err.stack) process.stderr.write(`${err.stack}\n`);
    else if (err.cause instanceof Error && !(err.cause instanceof BenchError) && err.cause.stack)
      process.stderr.write(`${err.cause.stack}\n`);
    process.exit(1);
  },
);
