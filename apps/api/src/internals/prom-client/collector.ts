import type { Registry } from 'prom-client';

/*
 * prom-client's collector contract, as of prom-client 15.1 (package.json pins ~15.1.3): a
 * registry takes any object with `name`, `help`, `type`, `aggregator`, `get()` (a promise of
 * `{ name, help, type, aggregator, values }`) and `reset()`, and renders it like its own metrics.
 * Its types only take its own Metric classes, whose label handling costs a lookup per observation
 * and which cannot read values kept elsewhere (Redis): metrics.ts and lag-histogram.ts register
 * their own collectors through here. collector.test.ts renders one through a real registry.
 */

/** A sample a collector returns from get(). */
export interface CollectorValue {
  readonly value: number;
  readonly labels: Record<string, string | number>;
  readonly metricName?: string;
}

/** What a registry reads of a metric. */
export interface Collector {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary';
  readonly aggregator: 'sum' | 'first' | 'min' | 'max' | 'average' | 'omit';
  get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: CollectorValue[];
  }>;
  reset(): void;
}

/** Registers `collector` in `registry`, read at every scrape like prom-client's own metrics. */
export function registerCollector(registry: Registry, collector: Collector): void {
  registry.registerMetric(collector as unknown as Parameters<Registry['registerMetric']>[0]);
}
