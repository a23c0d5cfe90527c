import type { RunEvent } from '@baton/protocol';
import { type BatonRuntime } from '@baton/runtime';
import {
  STEP_BUCKETS,
  TOOL_BUCKETS,
  decodeEventMetrics,
  decodeEventPayload,
  type EventMetricsSnapshot,
  type StoredHistogram,
} from '@baton/runtime/internal';
import type { RequestHandler } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { registerCollector } from './internals/prom-client/collector.ts';
import { LagHistogram } from './lag-histogram.ts';

const QUEUE_STATES = [
  'waiting',
  'active',
  'delayed',
  'waiting-children',
  'prioritized',
  'failed',
] as const;

/** What the stored event metrics' collectors need from the hash (one read per scrape). */
type EventMetricsSource = () => Promise<EventMetricsSnapshot>;

interface StoredMetricValue {
  readonly value: number;
  readonly labels: Record<string, string | number>;
  readonly metricName?: string;
}

/**
 * A metric whose values live in Redis (the counts every committing process adds, see
 * @baton/runtime's event-metrics.ts), not in this process: prom-client's own classes only count
 * what they observe, so this is a collector in the shape its registry reads (registerCollector).
 */
class StoredMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'histogram' | 'counter';
  readonly aggregator = 'omit';
  private readonly read: () => Promise<StoredMetricValue[]>;

  constructor(
    opts: { name: string; help: string; type: 'histogram' | 'counter'; registers: Registry[] },
    read: () => Promise<StoredMetricValue[]>,
  ) {
    this.name = opts.name;
    this.help = opts.help;
    this.type = opts.type;
    this.read = read;
    for (const registry of opts.registers) registerCollector(registry, this);
  }

  async get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: StoredMetricValue[];
  }> {
    const values = await this.read();
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }

  reset(): void {
    // the values are the deployment's, kept in Redis: nothing of this process to reset
  }
}

/** Prometheus histogram samples (cumulative buckets, +Inf, sum, count) of a stored histogram. */
function histogramValues(
  name: string,
  bounds: readonly number[],
  stored: StoredHistogram,
  labels: Record<string, string> = {},
): StoredMetricValue[] {
  const values: StoredMetricValue[] = [];
  let cumulative = 0;
  bounds.forEach((bound, i) => {
    cumulative += stored.buckets[i] ?? 0;
    values.push({
      metricName: `${name}_bucket`,
      labels: { ...labels, le: bound },
      value: cumulative,
    });
  });
  values.push(
    { metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: stored.count },
    { metricName: `${name}_sum`, labels, value: stored.sum },
    { metricName: `${name}_count`, labels, value: stored.count },
  );
  return values;
}

export interface ApiMetricsOptions {
  /**
   * The deployment's step/tool/finished-run metrics: true (the default) reads them from Redis
   * (one HGETALL per scrape), false reports none, a function supplies them.
   */
  readonly eventMetrics?: boolean | EventMetricsSource;
}

/** Prometheus metrics of one API instance (its own registry: several instances may share a process). */
export class ApiMetrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  readonly sseConnections: Gauge;
  /** Observed per frame per subscriber on its `sse` path: a histogram without per-call label work. */
  readonly eventLag: LagHistogram;
  /** eventLag's `sse` series, bound once. */
  readonly sseEventLag: { observe(seconds: number): void };
  readonly stepDuration: StoredMetric;
  readonly toolDuration: StoredMetric;
  readonly runsFinished: StoredMetric;
  readonly runsCreated: Counter<'agent' | 'version'>;

  constructor(runtime: BatonRuntime, opts: ApiMetricsOptions = {}) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'baton_api_' });
    this.httpDuration = new Histogram({
      name: 'baton_http_request_duration_seconds',
      help: 'HTTP request latency by route',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.sseConnections = new Gauge({
      name: 'baton_sse_connections',
      help: 'Open SSE event streams on this instance',
      registers,
    });
    this.eventLag = new LagHistogram({
      name: 'baton_event_lag_seconds',
      help: 'Time from an event being stored to it reaching this instance (pubsub; the runs it streams) or an SSE client socket (sse)',
      labelName: 'path',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    });
    this.sseEventLag = this.eventLag.labels('sse');
    const source = eventMetricsSource(runtime, opts.eventMetrics ?? true);
    this.stepDuration = new StoredMetric(
      {
        name: 'baton_step_duration_seconds',
        help: 'Run step duration (step.started to step.finished), counted where the events are committed (all runs)',
        type: 'histogram',
        registers,
      },
      async () =>
        histogramValues('baton_step_duration_seconds', STEP_BUCKETS, (await source()).step),
    );
    this.toolDuration = new StoredMetric(
      {
        name: 'baton_tool_duration_seconds',
        help: 'Tool execution duration (tool_call.result durationMs), counted where the events are committed (all runs)',
        type: 'histogram',
        registers,
      },
      async () =>
        [...(await source()).tools].flatMap(([tool, stored]) =>
          histogramValues('baton_tool_duration_seconds', TOOL_BUCKETS, stored, { tool }),
        ),
    );
    this.runsCreated = new Counter({
      name: 'baton_runs_created_total',
      help: 'Runs created through this instance, by agent and the agent version they run on ("" before versions)',
      labelNames: ['agent', 'version'],
      registers,
    });
    this.runsFinished = new StoredMetric(
      {
        name: 'baton_runs_finished_total',
        help: 'Runs that finished, by termination kind (counted where run.finished is committed)',
        type: 'counter',
        registers,
      },
      async () =>
        [...(await source()).finished].map(([termination, value]) => ({
          labels: { termination },
          value,
        })),
    );

    const redis = runtime.redis;
    const { keys } = runtime;
    const archiver = runtime.archiver;
    if (archiver) {
      // Read at each scrape from the pending list every process shares: the archive's lag is
      // the same whichever API instance is asked.
      let lag: Promise<{ pending: number; lagMs: number }> | null = null;
      const read = (): Promise<{ pending: number; lagMs: number }> => {
        lag ??= archiver.lag().finally(() => {
          lag = null;
        });
        return lag;
      };
      new Gauge({
        name: 'baton_archive_pending_runs',
        help: 'Finished runs not yet in the archive (ARCHIVE_URL)',
        registers,
        async collect() {
          this.set((await read()).pending);
        },
      });
      new Gauge({
        name: 'baton_archive_lag_seconds',
        help: 'How long the oldest finished run not yet archived has waited (0: none waits)',
        registers,
        async collect() {
          this.set((await read()).lagMs / 1000);
        },
      });
    }
    const { durability } = runtime;
    if (durability.mode === 'strict')
      // A counter read from the runtime at each scrape (this API process's acknowledgements).
      new Counter({
        name: 'baton_strict_unreplicated_acks_total',
        help: "Strict-mode writes acknowledged on a cluster master with no replica (after a failover, until the old master is back as its replica): on that master's disk only",
        registers,
        collect() {
          this.reset();
          this.inc(durability.unreplicatedAcknowledgements);
        },
      });
    new Gauge({
      name: 'baton_runs',
      help: 'Unfinished runs (all tenants): active ones should be moving, waiting ones wait for a decision or for their thread',
      labelNames: ['activity'],
      registers,
      // Two ZCARDs: the cost of a scrape does not grow with the number of runs.
      async collect() {
        const [active, waiting] = await Promise.all([
          redis.zcard(keys.activeRuns),
          redis.zcard(keys.waitingRuns),
        ]);
        this.set({ activity: 'active' }, active);
        this.set({ activity: 'waiting' }, waiting);
      },
    });
    new Gauge({
      name: 'baton_queue_jobs',
      help: 'BullMQ jobs by queue and state',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        const agents = await runtime.service.catalog.names();
        for (const queue of await runtime.queues.listQueues(agents)) {
          const counts = await queue.getJobCounts(...QUEUE_STATES);
          for (const state of QUEUE_STATES)
            this.set({ queue: queue.name, state }, counts[state] ?? 0);
        }
      },
    });
    new Gauge({
      name: 'baton_fairness_runs',
      help:
        'Runs per tenant (key="*": all its keys) and per tracked fairness key (the tenant\'s ' +
        'default key and keys named in BATON_FAIRNESS) (unless BATON_FAIRNESS=off): ' +
        'backlog (waiting for a slot), in_progress (holding one), limit (its window; for "*" the ' +
        "tenant's), dispatched (admitted since ever: rate() of it is the dispatch share)",
      labelNames: ['tenant', 'key', 'state'],
      registers,
      async collect() {
        this.reset();
        // Keys may be end users a tenant invents: only the operator's (tracked) keys get series
        // of their own, so the series are as many as the configuration makes them.
        for (const s of await runtime.admission.stats()) {
          const labels = { tenant: s.tenantId, key: s.key };
          this.set({ ...labels, state: 'backlog' }, s.backlog);
          this.set({ ...labels, state: 'in_progress' }, s.inProgress);
          this.set({ ...labels, state: 'dispatched' }, s.dispatched);
          if (s.limit !== null) this.set({ ...labels, state: 'limit' }, s.limit);
        }
      },
    });
  }

  /** HTTP latency by matched route (never the raw URL: ids would explode the label set). */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const end = this.httpDuration.startTimer();
      res.on('finish', () => {
        const route = (req.route as { path?: string } | undefined)?.path;
        const full = route === undefined ? 'unmatched' : `${req.baseUrl}${route}`;
        end({ method: req.method, route: full, status_code: String(res.statusCode) });
      });
      next();
    };
  }

  /** The pub/sub lag of one observed event this instance heard live. */
  observe(event: RunEvent, now: number): void {
    this.eventLag.observe('pubsub', Math.max(0, now - event.at) / 1000);
  }
}

/**
 * Reads the stored event metrics at most once per scrape: the three collectors that share them
 * ask within the same tick, so they share one HGETALL.
 */
function eventMetricsSource(
  runtime: BatonRuntime,
  setting: boolean | EventMetricsSource,
): EventMetricsSource {
  if (typeof setting === 'function') return setting;
  if (!setting) return () => Promise.resolve(decodeEventMetrics({}));
  let pending: Promise<EventMetricsSnapshot> | undefined;
  return () => {
    pending ??= runtime.redis.hgetall(runtime.keys.eventMetrics).then(decodeEventMetrics);
    const read = pending;
    setImmediate(() => {
      if (pending === read) pending = undefined;
    });
    return read;
  };
}

/** Event types the observer needs; a message with none of them (deltas above all) is skipped unparsed. */
const OBSERVED = /"type":"(step\.started|step\.finished|tool_call\.result|run\.finished)"/;
const OBSERVED_TYPES: ReadonlySet<string> = new Set([
  'step.started',
  'step.finished',
  'tool_call.result',
  'run.finished',
]);

/**
 * Folds one pub/sub message of a run this instance streams into the pub/sub lag. A message holds
 * the events of one commit (a JSON array) or one event; only the observed types are timed (deltas
 * are skipped unparsed). The API's RunEventSubscriber hands each live message here when
 * EVENT_METRICS is on (`decode` shares the decoding with the streams). Step and tool durations
 * and finished runs are not taken from here: they are counted where events are committed, for
 * every run, and each API instance reports the whole deployment's: do not sum across instances.
 */
export function observeMessage(
  metrics: ApiMetrics,
  message: string,
  now: number,
  decode: () => RunEvent[] = () => decodeEventPayload(message),
): void {
  if (!OBSERVED.test(message)) return;
  let events: RunEvent[];
  try {
    events = decode();
  } catch {
    return; // not an event: ignore
  }
  for (const event of events) {
    try {
      if (OBSERVED_TYPES.has(event.type)) metrics.observe(event, now);
    } catch {
      // not an event: ignore
    }
  }
}
