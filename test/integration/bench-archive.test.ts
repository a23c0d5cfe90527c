/**
 * The archive bench scenario on tiny knobs: it finishes and reports its counts, and every run
 * read back after Redis let it go is what its live stream delivered. No timing is asserted.
 */
import { describe, expect, it } from 'vitest';
import { runBench } from '@baton/testing/bench-run';

describe('npm run bench: archive', () => {
  it('archives every run once and reads each back identical after Redis let it go', async () => {
    const { code, out, err } = await runBench(['archive'], {
      BENCH_ARCHIVE_RUNS: '8',
      BENCH_ARCHIVE_IN_FLIGHT: '4',
      BENCH_ARCHIVE_RETENTION_S: '1',
      BENCH_ARCHIVE_READ_SAMPLES: '3',
    });
    expect(code, err).toBe(0);
    const report = (JSON.parse(out) as { scenarios: { archive: Record<string, unknown> } })
      .scenarios.archive;
    expect(report['identical']).toEqual({
      checked: 8,
      bodyMismatches: 0,
      threadMismatches: 0,
      eventMismatches: 0,
      bodiesCompared: 3,
    });
    expect(report['postgres']).toMatchObject({ rowsPerRun: { runs: 1 } });
  }, 180_000);
});
