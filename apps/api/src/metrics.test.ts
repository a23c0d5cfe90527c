import type { BatonRuntime } from '@baton/runtime';
import { CommittedEventCounts, decodeEventMetrics } from '@baton/runtime/internal';
import { describe, expect, it } from 'vitest';
import { ApiMetrics, observeMessage } from './metrics.ts';

// The gauges only touch Redis when scraped; the histograms under test never do.
const runtime = {
  redis: {},
  keys: {},
  durability: { mode: 'relaxed' },
} as unknown as BatonRuntime;

function event(seq: number, type: string, at: number, extra: Record<string, unknown> = {}) {
  return { seq, runId: 'r1', threadId: 't1', turnId: 'turn-0', at, type, ...extra };
}

/** The metrics hash as the committing processes' flushes leave it (HGETALL's reply). */
function flushed(counts: CommittedEventCounts): Record<string, string> {
  return Object.fromEntries([...counts.drain()].map(([field, n]) => [field, String(n)]));
}

describe('event metrics', () => {
  it('step durations come from the committed events of every commit (one event or several)', async () => {
    const counts = new CommittedEventCounts();
    counts.record('r1', 1000, [
      { type: 'run.status', status: 'running' },
      { type: 'step.started', step: 1 },
    ] as never);
    counts.record('r1', 1250, [
      { type: 'step.finished', step: 1, usage: { inputTokens: 0, outputTokens: 0 } },
    ] as never);
    const hash = flushed(counts);
    const metrics = new ApiMetrics(runtime, {
      eventMetrics: () => Promise.resolve(decodeEventMetrics(hash)),
    });
    const steps = (await metrics.stepDuration.get()).values;
    expect(steps.find((v) => v.metricName === 'baton_step_duration_seconds_count')?.value).toBe(1);
    expect(steps.find((v) => v.metricName === 'baton_step_duration_seconds_sum')?.value).toBe(0.25);
    expect(await metrics.registry.getSingleMetricAsString('baton_step_duration_seconds')).toContain(
      'baton_step_duration_seconds_bucket{le="0.25"} 1',
    );
  });

  it('the pub/sub lag folds in every observed event of a live message (a JSON array), one event alone too', async () => {
    const metrics = new ApiMetrics(runtime, { eventMetrics: false });
    observeMessage(
      metrics,
      JSON.stringify([event(4, 'run.status', 1000), event(5, 'step.started', 1000, { step: 1 })]),
      1010,
    );
    observeMessage(metrics, JSON.stringify(event(6, 'step.finished', 1250, { step: 1 })), 1260);
    observeMessage(metrics, 'not json "type":"run.finished"', 1300);
    const lag = (await metrics.eventLag.get()).values;
    // step.started and step.finished; run.status is not an observed type.
    expect(lag.find((v) => v.metricName === 'baton_event_lag_seconds_count')?.value).toBe(2);
  });
});
