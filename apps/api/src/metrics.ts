import type { RunEvent } from '@baton/protocol';
import { type BatonRuntime } from '@baton/runtime';
import { decodeEventPayload } from '@baton/runtime/internal';
import type { RequestHandler } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const QUEUE_STATES = [
  'waiting',
  'active',
  'delayed',
  'waiting-children',
  'prioritized',
  'failed',
] as const;

/** Prometheus metrics of one API instance (its own registry: several instances may share a process). */
export class ApiMetrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  readonly sseConnections: Gauge;
  readonly eventLag: Histogram<'path'>;
  readonly stepDuration: Histogram;
  readonly toolDuration: Histogram<'tool'>;
  readonly runsCreated: Counter<'agent'>;
  readonly runsFinished: Counter<'termination'>;
  private readonly stepStarts = new Map<string, number>();

  constructor(runtime: BatonRuntime) {
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
    this.eventLag = new Histogram({
      name: 'baton_event_lag_seconds',
      help: 'Time from an event being stored to it reaching this instance (pubsub) or an SSE client socket (sse)',
      labelNames: ['path'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    });
    this.stepDuration = new Histogram({
      name: 'baton_step_duration_seconds',
      help: 'Run step duration (step.started to step.finished), observed from the event log',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.toolDuration = new Histogram({
      name: 'baton_tool_duration_seconds',
      help: 'Tool execution duration (tool_call.result durationMs), observed from the event log',
      labelNames: ['tool'],
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.runsCreated = new Counter({
      name: 'baton_runs_created_total',
      help: 'Runs created through this instance',
      labelNames: ['agent'],
      registers,
    });
    this.runsFinished = new Counter({
      name: 'baton_runs_finished_total',
      help: 'Runs that finished, by termination kind (observed events)',
      labelNames: ['termination'],
      registers,
    });

    const redis = runtime.redis;
    const { keys } = runtime;
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

  /** Folds one observed event into the step/tool/run metrics. */
  observe(event: RunEvent, now: number): void {
    this.eventLag.observe({ path: 'pubsub' }, Math.max(0, now - event.at) / 1000);
    switch (event.type) {
      case 'step.started':
        if (this.stepStarts.size > 50_000) this.stepStarts.clear();
        this.stepStarts.set(`${event.runId}/${event.step}`, event.at);
        break;
      case 'step.finished': {
        const key = `${event.runId}/${event.step}`;
        const started = this.stepStarts.get(key);
        if (started !== undefined) {
          this.stepDuration.observe(Math.max(0, event.at - started) / 1000);
          this.stepStarts.delete(key);
        }
        break;
      }
      case 'tool_call.result':
        if (event.durationMs !== undefined)
          this.toolDuration.observe({ tool: event.toolName }, event.durationMs / 1000);
        break;
      case 'run.finished':
        if (event.status === 'done') this.runsFinished.inc({ termination: event.termination.kind });
        break;
      default:
        break;
    }
  }
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
 * Folds one pub/sub message of a run's channel into the metrics. A message holds the events of
 * one commit (a JSON array) or one event; only the observed types are folded in. The API's
 * RunEventSubscriber watches every run's channel (PSUBSCRIBE) when EVENT_METRICS is on and hands
 * each message here (`decode` shares the decoding with the streams), so step and tool durations
 * are measured for all runs, not only streamed ones. Each API instance sees the whole cluster:
 * do not sum across instances.
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
