/**
 * `npm run bench` is a documented command (docs/development.md): a tiny run of each throughput variant must finish and
 * print its JSON with every run completed (it once polled a key the store no longer writes and
 * "finished" before any run did). Counts only; no timing is asserted.
 */
import { describe, expect, it } from 'vitest';
import { runBench } from '@baton/testing/bench-run';

describe('npm run bench', () => {
  it('the throughput scenario completes on a tiny budget and reports JSON', async () => {
    const { code, out, err } = await runBench(['throughput'], {
      BENCH_RUNS: '6',
      BENCH_WARMUP_RUNS: '2',
      BENCH_RAW_JOBS: '60',
      BENCH_RAW_WARMUP_JOBS: '20',
      BENCH_PROFILE_RUNS: '2',
      BENCH_REPEAT: '1',
      BENCH_WORKER_PROCS: '1',
    });
    expect(code, err.slice(-2000)).toBe(0);
    const report = JSON.parse(out) as {
      scenarios: { throughput: { ratios: { stepsPerSecOverRawJobsPerSec: number }[] } };
    };
    const ratios = report.scenarios.throughput.ratios;
    expect(ratios.length).toBeGreaterThan(0);
    for (const r of ratios) expect(r.stepsPerSecOverRawJobsPerSec).toBeGreaterThan(0);
  }, 120_000);

  it('a failing scenario is reported and the rest still run and print', async () => {
    const { code, out, err } = await runBench(['throughput', 'budgets'], {
      BENCH_TIMEOUT_MS: '1',
    });
    expect(code).toBe(1);
    expect(err).toContain('scenario "throughput" failed: BENCH_TIMEOUT_MS must be');
    const report = JSON.parse(out) as {
      scenarios: { throughput: { failed: string }; budgets: { notMeasured: string[] } };
    };
    expect(report.scenarios.throughput.failed).toContain('BENCH_TIMEOUT_MS');
    expect(report.scenarios.budgets.notMeasured).toContain('batonRedisCommandsPerStep');
  }, 60_000);
});
