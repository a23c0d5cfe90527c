/**
 * Scenario "timers" (issue 36): BENCH_TIMERS_RUNS runs (default 10,000) waiting on an approval
 * whose deadline (deny) falls somewhere in a BENCH_TIMERS_SPREAD_S window (default 600 s), while
 * a worker process is killed with SIGKILL every BENCH_TIMERS_KILL_S seconds (default 10; 0: never)
 * and replaced; BENCH_TIMERS_WORKERS worker processes (default 2). Reports deadline lateness
 * (commit of `tool_call.deadline_expired` minus the deadline) p50/p99/max, MEMORY USAGE bytes per
 * waiting run (its keys, its thread's, its share of the timer index), BullMQ jobs held while they
 * wait (must be 0), and calls with exactly one outcome. The driver is
 * packages/testing/src/timer-load.ts, which the faults test timers-volume runs at 2,000 / 60 s.
 */
import { percentile, runTimerLoad } from '@baton/testing/timer-load';
import { BenchError, envInt, round, type Scenario } from './lib.ts';

export const timers: Scenario = {
  name: 'timers',
  description:
    'N runs waiting on deadlines spread over a window, a worker kill -9 every 10 s: deadline lateness p50/p99, bytes per waiting run, jobs held',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('timers needs Redis');
    const runs = envInt('BENCH_TIMERS_RUNS', 10_000, 1);
    const spreadS = envInt('BENCH_TIMERS_SPREAD_S', 600, 1);
    const killS = envInt('BENCH_TIMERS_KILL_S', 10, 0);
    const workers = envInt('BENCH_TIMERS_WORKERS', 2, 1);
    const r = await runTimerLoad({
      redisUrl: url,
      mode: 'deadline',
      runs,
      spreadMs: spreadS * 1000,
      leadMs: 5_000,
      workers,
      killEveryMs: killS * 1000,
      parallelism: envInt('BENCH_CREATE_PARALLELISM', 32, 1),
      log: (m) => ctx.log(m),
    });
    const p = (q: number): number => round(percentile(r.latenessMs, q), 0);
    return {
      config: {
        runs,
        spreadSeconds: spreadS,
        killEverySeconds: killS,
        workers,
        agent: 'bench-approval with options.deadline { timeout, outcome: deny }',
        lateness: 'commit time of tool_call.deadline_expired minus the deadline (ms)',
        bytes:
          'MEMORY USAGE (SAMPLES 0) of a waiting run’s keys and its thread’s (50 sampled), plus the timer index bytes per entry',
      },
      createSeconds: r.createSeconds,
      waitingAtMeasure: r.waitingAtMeasure,
      bullmqJobsHeldWhileWaiting: r.jobsHeldWhileWaiting,
      bytesPerWaitingRun: r.bytesPerWaitingRun,
      deadlineLatenessMs: { p50: p(50), p95: p(95), p99: p(99), max: p(100) },
      fired: r.latenessMs.length,
      outcomes: r.outcomes,
      workerKills: r.kills,
    };
  },
};
