import type { EventBody } from '@baton/protocol';
import { defineScript, type LuaScript, type RedisClient } from './scripts.ts';

/**
 * Event metrics counted where events are committed, not where they are heard: every process that
 * commits a run's events (workers, and the API for creates, decisions and cancels) folds the few
 * event types the metrics need into counters of its own, and adds them to one Redis hash every
 * few seconds (one script call per flush). An API's /metrics reads that hash, so each instance
 * reports every run of the deployment without receiving a single pub/sub message: on a Redis
 * Cluster nothing has to subscribe to every run's channel (a PSUBSCRIBE is broadcast to every
 * node), and the cost is one small write per process per interval whatever the event rate.
 *
 * Hash fields are `<metric>|<stat>|<label>`: metric `step` (step duration, no label), `tool`
 * (tool duration, label = tool name) or `finished` (runs finished, label = termination kind);
 * stat `count`, `sum` (seconds) or `le:<upper bound>` (observations in that bucket only, not
 * cumulative; `le:+Inf` above the last bound). The hash only grows by tool names and termination
 * kinds; the counters never reset (Prometheus counters of the deployment, not of a process).
 *
 * A step's duration needs its step.started and step.finished: the process that commits the
 * finish measures it when it committed the start too (the start times it keeps are its own). A
 * step that another worker finishes (after its tool jobs, or after a crash) is not sampled.
 * Best effort: a flush that fails (Redis away) drops its counts rather than risk adding them twice.
 */

/** Step duration buckets (seconds). */
export const STEP_BUCKETS: readonly number[] = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Tool duration buckets (seconds). */
export const TOOL_BUCKETS: readonly number[] = [
  0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

const FLUSH_EVERY_MS = 5_000;
/** Start times a process keeps for steps it has not seen finish (older ones are dropped). */
const MAX_OPEN_STEPS = 50_000;

/**
 * KEYS: the metrics hash. ARGV: field, increment, field, increment, …
 * Reply: the number of fields incremented.
 */
const ADD_LUA = `
for i = 1, #ARGV, 2 do redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1]) end
return #ARGV / 2
`;

/** One histogram as stored: per-bucket (not cumulative) counts, the last one above every bound. */
export interface StoredHistogram {
  readonly buckets: number[];
  sum: number;
  count: number;
}

export interface EventMetricsSnapshot {
  readonly step: StoredHistogram;
  readonly tools: Map<string, StoredHistogram>;
  readonly finished: Map<string, number>;
}

function bucketField(bounds: readonly number[], seconds: number): string {
  const bound = bounds.find((b) => seconds <= b);
  return bound === undefined ? 'le:+Inf' : `le:${bound}`;
}

/** The counters of one process since its last flush, and the step starts it committed. */
export class CommittedEventCounts {
  private pending = new Map<string, number>();
  private readonly stepStarts = new Map<string, number>();

  /** Folds the events of one commit of `runId`, stored at `at` (ms), into the counters. */
  record(runId: string, at: number, events: readonly EventBody[]): void {
    for (const event of events) {
      switch (event.type) {
        case 'step.started':
          if (this.stepStarts.size >= MAX_OPEN_STEPS) this.stepStarts.clear();
          this.stepStarts.set(`${runId}/${event.step}`, at);
          break;
        case 'step.finished': {
          const key = `${runId}/${event.step}`;
          const started = this.stepStarts.get(key);
          if (started === undefined) break;
          this.stepStarts.delete(key);
          this.observe('step', '', STEP_BUCKETS, Math.max(0, at - started) / 1000);
          break;
        }
        case 'tool_call.result':
          if (event.durationMs !== undefined)
            this.observe('tool', event.toolName, TOOL_BUCKETS, event.durationMs / 1000);
          break;
        case 'run.finished':
          if (event.status === 'done') this.add(`finished|count|${event.termination.kind}`, 1);
          break;
        default:
          break;
      }
    }
  }

  /** The increments since the last drain (field → amount), which start again from zero. */
  drain(): Map<string, number> {
    const drained = this.pending;
    this.pending = new Map();
    return drained;
  }

  private observe(metric: string, label: string, bounds: readonly number[], seconds: number): void {
    this.add(`${metric}|count|${label}`, 1);
    this.add(`${metric}|sum|${label}`, seconds);
    this.add(`${metric}|${bucketField(bounds, seconds)}|${label}`, 1);
  }

  private add(field: string, amount: number): void {
    this.pending.set(field, (this.pending.get(field) ?? 0) + amount);
  }
}

/** Adds a process's counts to the metrics hash every few seconds (and on close). */
export class EventMetricsRecorder {
  readonly counts = new CommittedEventCounts();
  private readonly key: string;
  private readonly addScript: LuaScript<[string], string[], number>;
  private readonly everyMs: number;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(redis: RedisClient, key: string, everyMs = FLUSH_EVERY_MS) {
    this.key = key;
    this.everyMs = everyMs;
    this.addScript = defineScript(redis, 'batonEventMetricsAdd', 1, ADD_LUA);
  }

  /** See CommittedEventCounts.record; the first call starts the periodic flush. */
  record(runId: string, at: number, events: readonly EventBody[]): void {
    this.counts.record(runId, at, events);
    if (this.timer === undefined && !this.closed) {
      this.timer = setInterval(() => void this.flush(), this.everyMs);
      this.timer.unref();
    }
  }

  /** Adds what was counted since the last flush to the hash (nothing to send: no command). */
  async flush(): Promise<void> {
    const drained = this.counts.drain();
    if (drained.size === 0) return;
    const argv: string[] = [];
    for (const [field, amount] of drained) argv.push(field, String(amount));
    await this.addScript([this.key], argv).catch(() => undefined);
  }

  /** Stops the periodic flush after a last one. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

function emptyHistogram(bounds: readonly number[]): StoredHistogram {
  return { buckets: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
}

/** Reads the metrics hash (HGETALL's reply) back into histograms and counters. */
export function decodeEventMetrics(hash: Record<string, string>): EventMetricsSnapshot {
  const snapshot: EventMetricsSnapshot = {
    step: emptyHistogram(STEP_BUCKETS),
    tools: new Map(),
    finished: new Map(),
  };
  for (const [field, raw] of Object.entries(hash)) {
    const first = field.indexOf('|');
    const second = field.indexOf('|', first + 1);
    if (first < 0 || second < 0) continue;
    const metric = field.slice(0, first);
    const stat = field.slice(first + 1, second);
    const label = field.slice(second + 1);
    const value = Number(raw);
    if (!Number.isFinite(value)) continue;
    if (metric === 'finished') {
      if (stat === 'count') snapshot.finished.set(label, value);
      continue;
    }
    const bounds = metric === 'step' ? STEP_BUCKETS : metric === 'tool' ? TOOL_BUCKETS : undefined;
    if (bounds === undefined) continue;
    let histogram = snapshot.step;
    if (metric === 'tool') {
      histogram = snapshot.tools.get(label) ?? emptyHistogram(TOOL_BUCKETS);
      snapshot.tools.set(label, histogram);
    }
    if (stat === 'count') histogram.count = value;
    else if (stat === 'sum') histogram.sum = value;
    else if (stat.startsWith('le:')) {
      const bound = stat.slice(3);
      const index = bound === '+Inf' ? bounds.length : bounds.indexOf(Number(bound));
      if (index >= 0) histogram.buckets[index] = value;
    }
  }
  return snapshot;
}
