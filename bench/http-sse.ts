/** The SSE side of the HTTP scenarios: follow a run's event stream, time its frames. */
import { request, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { RunEvent } from '@baton/protocol';
import { SseParser } from '@baton/testing/sse-client';
import { mustPost, type Client } from './http-client.ts';
import { BenchError } from './lib.ts';

export interface Received {
  readonly event: RunEvent;
  /** performance.now() when its frame was parsed. */
  readonly t: number;
}

export interface EventStream {
  /** performance.now() when the response headers arrived. */
  readonly headersAt: number;
  readonly received: Received[];
  /** Resolves on run.finished (with its performance.now()); rejects on an unexpected end. */
  readonly finished: Promise<number>;
  /** Resolves when the server has ended the response (socket back in the pool). */
  readonly ended: Promise<void>;
  /** Bytes of response body received so far. */
  bytes(): number;
  close(): void;
}

export interface EventStreamOptions {
  readonly after?: number;
  readonly until?: 'done' | 'suspended';
  readonly timeoutMs: number;
  /** Which run.finished resolves `finished` (default 'done': status done, natural end). */
  readonly expect?: 'done' | 'waiting' | 'any';
  /** Called on every parsed frame (after it is recorded). */
  readonly onEvent?: (r: Received) => void;
}

/** GET /v1/runs/:id/events; resolves once the response headers are in. */
export function openEvents(
  c: Client,
  runId: string,
  opts: EventStreamOptions,
): Promise<EventStream> {
  const query = `after=${opts.after ?? 0}${opts.until ? `&until=${opts.until}` : ''}`;
  return new Promise((resolveOpen, rejectOpen) => {
    const req = request({
      host: c.base.hostname,
      port: c.base.port,
      path: `/v1/runs/${encodeURIComponent(runId)}/events?${query}`,
      method: 'GET',
      agent: c.agent,
      headers: { authorization: `Bearer ${c.key}`, accept: 'text/event-stream' },
    });
    const timer = setTimeout(
      () =>
        req.destroy(new BenchError(`run ${runId}: no run.finished within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    req.on('error', (err) => {
      clearTimeout(timer);
      rejectOpen(err);
    });
    req.on('response', (res: IncomingMessage) => {
      const headersAt = performance.now();
      if (res.statusCode !== 200) {
        clearTimeout(timer);
        res.resume();
        rejectOpen(new BenchError(`GET events of ${runId}: HTTP ${res.statusCode}`));
        return;
      }
      const parser = new SseParser();
      const received: Received[] = [];
      let bytes = 0;
      let onFinished!: (t: number) => void;
      let onFail!: (err: Error) => void;
      const finished = new Promise<number>((resolve, reject) => {
        onFinished = resolve;
        onFail = reject;
      });
      const ended = new Promise<void>((resolve) => {
        res.on('end', () => {
          clearTimeout(timer);
          onFail(new BenchError(`run ${runId}: stream ended without run.finished`));
          resolve();
        });
        res.on('close', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      finished.catch(() => undefined); // observed by the caller
      res.on('error', (err) => onFail(err));
      req.on('error', (err) => onFail(err));
      res.setEncoding('utf8');
      const expect = opts.expect ?? 'done';
      res.on('data', (text: string) => {
        const t = performance.now();
        bytes += Buffer.byteLength(text);
        for (const m of parser.push(text)) {
          const event = JSON.parse(m.data) as RunEvent;
          const r = { event, t };
          received.push(r);
          opts.onEvent?.(r);
          if (event.type !== 'run.finished') continue;
          const natural = event.status === 'done' && event.termination.kind === 'natural_end';
          if (expect === 'any' || (expect === 'done' ? natural : event.status === 'waiting'))
            onFinished(t);
          else
            onFail(
              new BenchError(
                `run ${runId} finished with ${event.status} / ${JSON.stringify(event.termination)}`,
              ),
            );
        }
      });
      resolveOpen({
        headersAt,
        received,
        finished,
        ended,
        bytes: () => bytes,
        close: () => {
          clearTimeout(timer);
          req.destroy();
        },
      });
    });
    req.end();
  });
}

/** Epoch ms (fractional) of a performance.now() reading, to compare with events' `at`. */
export function epochOf(t: number): number {
  return performance.timeOrigin + t;
}

export interface Followed {
  readonly runId: string;
  /** performance.now() before the POST. */
  readonly t0: number;
  /** performance.now() of the run.finished frame. */
  readonly finishedAt: number;
  readonly received: readonly Received[];
  /** SSE body bytes received. */
  readonly bytes: number;
}

/** POST /v1/runs with `body`, then follow its stream from the start until run.finished (done). */
export async function submitAndFollow(
  c: Client,
  body: unknown,
  timeoutMs: number,
): Promise<Followed> {
  const t0 = performance.now();
  const { runId } = await mustPost<{ runId: string }>(c, '/v1/runs', body, timeoutMs);
  const sse = await openEvents(c, runId, { timeoutMs });
  const finishedAt = await sse.finished;
  await sse.ended;
  return { runId, t0, finishedAt, received: sse.received, bytes: sse.bytes() };
}

/** Mean step.started → step.finished of one run, from the events' own `at` (ms). */
export function meanStepMs(received: readonly Received[]): number {
  const started = new Map<number, number>();
  const durations: number[] = [];
  for (const { event } of received) {
    if (event.type === 'step.started') started.set(event.step, event.at);
    if (event.type === 'step.finished') {
      const at = started.get(event.step);
      if (at !== undefined) durations.push(event.at - at);
    }
  }
  return durations.length === 0
    ? Number.NaN
    : durations.reduce((a, b) => a + b, 0) / durations.length;
}
