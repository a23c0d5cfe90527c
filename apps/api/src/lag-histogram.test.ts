import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LagHistogram } from './lag-histogram.ts';

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

function pair(): { ours: LagHistogram; theirs: Histogram<'path'>; a: Registry; b: Registry } {
  const a = new Registry();
  const b = new Registry();
  const opts = { name: 'lag_seconds', help: 'lag', buckets: BUCKETS };
  const ours = new LagHistogram({ ...opts, labelName: 'path', registers: [a] });
  const theirs = new Histogram({ ...opts, labelNames: ['path'], registers: [b] });
  return { ours, theirs, a, b };
}

describe('LagHistogram', () => {
  it("exposes what prom-client's Histogram exposes for the same observations", async () => {
    const { ours, theirs, a, b } = pair();
    expect(await a.metrics()).toBe(await b.metrics());
    const sse = ours.labels('sse');
    const sseTheirs = theirs.labels({ path: 'sse' });
    for (const v of [0, 0.0005, 0.001, 0.003, 0.02, 0.7, 5, 12]) {
      sse.observe(v);
      sseTheirs.observe(v);
    }
    ours.observe('pubsub', 0.002);
    theirs.observe({ path: 'pubsub' }, 0.002);
    expect(await a.metrics()).toBe(await b.metrics());
    expect((await ours.get()).values).toEqual(
      (await theirs.get()).values.map(({ metricName, labels, value }) => ({
        metricName,
        labels,
        value,
      })),
    );
    a.resetMetrics();
    b.resetMetrics();
    ours.observe('pubsub', 0.3);
    theirs.observe({ path: 'pubsub' }, 0.3);
    expect(await a.metrics()).toBe(await b.metrics());
  });

  it('refuses a value that is not a finite number, as prom-client does', () => {
    const { ours } = pair();
    expect(() => ours.labels('sse').observe(Number.NaN)).toThrow(TypeError);
    expect(ours.labels('sse').count).toBe(0);
  });
});
