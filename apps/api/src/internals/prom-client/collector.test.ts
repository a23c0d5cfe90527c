import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerCollector, type Collector, type CollectorValue } from './collector.ts';

function collector(values: { value: number; labels: Record<string, string | number> }[]) {
  let resets = 0;
  const c: Collector & { resets(): number } = {
    name: 'contract_total',
    help: 'a collector registered by hand',
    type: 'counter',
    aggregator: 'sum',
    get: () =>
      Promise.resolve({
        name: 'contract_total',
        help: 'a collector registered by hand',
        type: 'counter',
        aggregator: 'sum',
        values,
      }),
    reset: () => {
      resets += 1;
    },
    resets: () => resets,
  };
  return c;
}

/** Contract of prom-client's collector shape (collector.ts): fails when an upgrade changes it. */
describe('registerCollector (prom-client internals)', () => {
  it('renders a hand-made collector like the registry renders its own metrics', async () => {
    const registry = new Registry();
    registerCollector(registry, collector([{ value: 3, labels: { agent: 'a' } }]));
    expect(await registry.metrics()).toBe(
      [
        '# HELP contract_total a collector registered by hand',
        '# TYPE contract_total counter',
        'contract_total{agent="a"} 3',
        '',
      ].join('\n'),
    );
    expect(registry.getSingleMetric('contract_total')).toBeDefined();
  });

  it('renders metricName samples as a histogram does (bucket, sum, count), and resets it', async () => {
    const own = new Registry();
    const reference = new Histogram({
      name: 'lag_seconds',
      help: 'h',
      labelNames: ['path'],
      buckets: [1],
      registers: [own],
    });
    reference.observe({ path: 'sse' }, 0.5);
    const samples: CollectorValue[] = [
      { metricName: 'lag_seconds_bucket', labels: { le: 1, path: 'sse' }, value: 1 },
      { metricName: 'lag_seconds_bucket', labels: { le: '+Inf', path: 'sse' }, value: 1 },
      { metricName: 'lag_seconds_sum', labels: { path: 'sse' }, value: 0.5 },
      { metricName: 'lag_seconds_count', labels: { path: 'sse' }, value: 1 },
    ];
    const registry = new Registry();
    const c = collector([]);
    registerCollector(registry, {
      ...c,
      name: 'lag_seconds',
      help: 'h',
      type: 'histogram',
      get: () =>
        Promise.resolve({
          name: 'lag_seconds',
          help: 'h',
          type: 'histogram',
          aggregator: 'sum',
          values: samples,
        }),
    });
    expect(await registry.metrics()).toBe(await own.metrics());
    registry.resetMetrics();
    expect(c.resets()).toBe(1);
  });
});
