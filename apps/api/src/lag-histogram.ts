import type { Registry } from 'prom-client';
import { registerCollector } from './internals/prom-client/collector.ts';

type Labels = Readonly<Record<string, string>>;

interface HistogramSample {
  readonly metricName: string;
  readonly labels: Record<string, string | number>;
  readonly value: number;
}

/** One label set's counts: a plain array and two numbers, no lookup per observation. */
class HistogramSeries {
  private readonly owner: LagHistogram;
  readonly labels: Labels;
  /** Observations per bucket (not cumulative); those above the last bound are only in count. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(owner: LagHistogram, labels: Labels, buckets: number) {
    this.owner = owner;
    this.labels = labels;
    this.counts = new Array<number>(buckets).fill(0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.owner.bounds;
    for (let i = 0; i < bounds.length; i += 1) {
      if (value <= (bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        break;
      }
    }
    if (this.count === 0) this.owner.observed(this);
    this.sum += value;
    this.count += 1;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/**
 * A Prometheus histogram with prom-client's exposition (same samples, labels, order and reset),
 * for a metric observed on a hot path: prom-client's `observe`, even through a child bound to
 * its labels, builds a label object and a label hash on every call. A child here is the series
 * itself. The registry reads it like any collector (name, help, type, get(), reset()).
 */
export class LagHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly bounds: readonly number[];
  private readonly children = new Map<string, HistogramSeries>();
  /** Series observed since the last reset, in the order of their first observation. */
  private shown: HistogramSeries[] = [];

  constructor(opts: {
    name: string;
    help: string;
    labelName: string;
    buckets: readonly number[];
    registers: readonly Registry[];
  }) {
    this.name = opts.name;
    this.help = opts.help;
    this.labelName = opts.labelName;
    this.bounds = [...opts.buckets].sort((a, b) => a - b);
    for (const registry of opts.registers) registerCollector(registry, this);
  }

  private readonly labelName: string;

  /** The series of one label value (bind it once: observing it is the cheap path). */
  labels(value: string): HistogramSeries {
    let series = this.children.get(value);
    if (series === undefined) {
      series = new HistogramSeries(this, { [this.labelName]: value }, this.bounds.length);
      this.children.set(value, series);
    }
    return series;
  }

  observe(value: string, seconds: number): void {
    this.labels(value).observe(seconds);
  }

  /** @internal a series' first observation since the last reset */
  observed(series: HistogramSeries): void {
    this.shown.push(series);
  }

  get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: HistogramSample[];
  }> {
    const bucket = `${this.name}_bucket`;
    const values: HistogramSample[] = [];
    for (const series of this.shown) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += series.counts[i] ?? 0;
        values.push({
          metricName: bucket,
          labels: { le: bound, ...series.labels },
          value: cumulative,
        });
      });
      values.push(
        { metricName: bucket, labels: { le: '+Inf', ...series.labels }, value: series.count },
        { metricName: `${this.name}_sum`, labels: { ...series.labels }, value: series.sum },
        { metricName: `${this.name}_count`, labels: { ...series.labels }, value: series.count },
      );
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }

  reset(): void {
    for (const series of this.shown) series.reset();
    this.shown = [];
  }
}
