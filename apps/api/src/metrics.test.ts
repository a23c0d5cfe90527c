import type { BatonRuntime } from '@baton/runtime';
import { describe, expect, it } from 'vitest';
import { ApiMetrics, observeMessage } from './metrics.ts';

// The gauges only touch Redis when scraped; the histograms under test never do.
const runtime = { redis: {}, keys: {} } as unknown as BatonRuntime;

function event(seq: number, type: string, at: number, extra: Record<string, unknown> = {}) {
  return { seq, runId: 'r1', threadId: 't1', turnId: 'turn-0', at, type, ...extra };
}

describe('EventMetricsObserver messages', () => {
  it('folds in every observed event of a commit (a JSON array), one event alone too', async () => {
    const metrics = new ApiMetrics(runtime);
    observeMessage(
      metrics,
      JSON.stringify([event(4, 'run.status', 1000), event(5, 'step.started', 1000, { step: 1 })]),
      1010,
    );
    observeMessage(metrics, JSON.stringify(event(6, 'step.finished', 1250, { step: 1 })), 1260);
    observeMessage(metrics, 'not json "type":"run.finished"', 1300);
    const steps = (await metrics.stepDuration.get()).values;
    expect(steps.find((v) => v.metricName === 'baton_step_duration_seconds_count')?.value).toBe(1);
    expect(steps.find((v) => v.metricName === 'baton_step_duration_seconds_sum')?.value).toBe(0.25);
    const lag = (await metrics.eventLag.get()).values;
    // step.started and step.finished; run.status is not an observed type.
    expect(lag.find((v) => v.metricName === 'baton_event_lag_seconds_count')?.value).toBe(2);
  });
});
