import type { Response } from 'express';

/**
 * The one Server-Sent Events serializer. A frame is `id:`, `event:` and one `data:` line per
 * line of data, ended by a blank line; comments (`: ping`) keep idle connections open.
 */
export interface SseFrame {
  readonly id?: string | number;
  readonly event?: string;
  readonly data: string;
  /** Reconnection delay hint for EventSource, in ms. */
  readonly retry?: number;
}

const LINE_BREAK = /[\r\n]/;

function singleLine(value: string, field: string): string {
  if (LINE_BREAK.test(value)) throw new Error(`SSE ${field} may not contain line breaks`);
  return value;
}

export function formatFrame(frame: SseFrame): string {
  let out = '';
  if (frame.id !== undefined) out += `id: ${singleLine(String(frame.id), 'id')}\n`;
  if (frame.event !== undefined) out += `event: ${singleLine(frame.event, 'event')}\n`;
  if (frame.retry !== undefined) out += `retry: ${Math.max(0, Math.floor(frame.retry))}\n`;
  for (const line of frame.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

export function formatComment(text: string): string {
  return `${text
    .split(/\r\n|\r|\n/)
    .map((line) => `: ${line}`)
    .join('\n')}\n\n`;
}

/**
 * The frames of events already serialised: the subscriber hands the same decoded event object to
 * every listener of its run, so a frame is built once per event, not once per subscriber (the
 * object is never mutated once delivered; the entry goes with it).
 */
const framesOf = new WeakMap<object, string>();

/** A JSON payload as a frame whose id is its sequence and event its type. */
export function eventFrame(event: { seq: number; type: string }): string {
  let frame = framesOf.get(event);
  if (frame === undefined) {
    frame = buildEventFrame(event);
    framesOf.set(event, frame);
  }
  return frame;
}

function buildEventFrame(event: { seq: number; type: string }): string {
  const data = JSON.stringify(event);
  // The frame of every event of every stream: JSON.stringify escapes line breaks, so the data is
  // one line and needs no splitting, nor does a numeric id. Anything else takes formatFrame.
  if (
    typeof event.seq === 'number' &&
    typeof event.type === 'string' &&
    !LINE_BREAK.test(event.type)
  )
    return `id: ${event.seq}\nevent: ${event.type}\ndata: ${data}\n\n`;
  return formatFrame({ id: event.seq, event: event.type, data });
}

/**
 * The frame that ends a stream whose run's log lost events this stream had sent (Redis came back
 * from an older past, and the lost seqs are being reused for other events): `event: error`, the
 * API's error body with code `event_log_rewound`. The client drops what it holds of the run and
 * reads it again from the start.
 */
export function rewoundFrame(rewound: {
  delivered: number;
  lastSeq: number;
  /** On a tree stream: which run of the tree. */
  runId?: string;
}): string {
  return formatFrame({
    event: 'error',
    data: JSON.stringify({
      error: {
        code: 'event_log_rewound',
        message: `the store lost events of this run after a restart (this stream had sent up to seq ${String(rewound.delivered)}; the log now ends at ${String(rewound.lastSeq)} with events that may replace them): drop what you received and read the run's events again from the start`,
        details: rewound,
      },
    }),
  });
}

const PING = formatComment('ping');

/**
 * The open streams of one heartbeat period, pinged by ONE interval (not a timer per connection:
 * with thousands of subscribers the timers, their closures and their wake-ups add up). A stream's
 * first ping comes within one period of its opening instead of exactly one period after it.
 */
class HeartbeatGroup {
  readonly streams = new Set<SseStream>();
  private readonly timer: NodeJS.Timeout;

  constructor(periodMs: number, onEmpty: () => void) {
    this.timer = setInterval(() => {
      for (const stream of this.streams) stream.write(PING);
      if (this.streams.size === 0) {
        clearInterval(this.timer);
        onEmpty();
      }
    }, periodMs);
    this.timer.unref();
  }
}

const heartbeats = new Map<number, HeartbeatGroup>();

function heartbeatGroup(periodMs: number): HeartbeatGroup {
  let group = heartbeats.get(periodMs);
  if (group === undefined) {
    const created = new HeartbeatGroup(periodMs, () => {
      if (heartbeats.get(periodMs) === created) heartbeats.delete(periodMs);
    });
    heartbeats.set(periodMs, created);
    group = created;
  }
  return group;
}

const SSE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  // nginx and friends: do not buffer this response.
  'X-Accel-Buffering': 'no',
};

/** An open SSE response: headers are flushed at once, heartbeats run until close(). */
export class SseStream {
  private readonly res: Response;
  private heartbeat: HeartbeatGroup | undefined;
  private ended = false;

  /** `headers`: a protocol's own response headers (AI SDK, AG-UI) instead of Baton's. */
  constructor(
    res: Response,
    heartbeatMs: number,
    headers: Readonly<Record<string, string>> = SSE_HEADERS,
  ) {
    this.res = res;
    res.status(200);
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    // The headers leave at the end of this tick together with what the route writes right after
    // (its opening comment): one write to the socket instead of two. Node's own writes cork the
    // same way (until the next tick).
    const socket = res.socket;
    if (socket && !socket.writableCorked) {
      socket.cork();
      process.nextTick(() => socket.uncork());
    }
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    this.heartbeat = heartbeatGroup(heartbeatMs);
    this.heartbeat.streams.add(this);
  }

  get closed(): boolean {
    return this.ended || this.res.writableEnded || this.res.destroyed;
  }

  write(chunk: string): boolean {
    if (this.closed) return false;
    return this.res.write(chunk);
  }

  send(frame: SseFrame): boolean {
    return this.write(formatFrame(frame));
  }

  comment(text: string): boolean {
    return this.write(formatComment(text));
  }

  close(): void {
    this.heartbeat?.streams.delete(this);
    this.heartbeat = undefined;
    if (this.ended) return;
    this.ended = true;
    if (!this.res.writableEnded && !this.res.destroyed) this.res.end();
  }
}
