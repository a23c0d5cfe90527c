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

function singleLine(value: string, field: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`SSE ${field} may not contain line breaks`);
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

/** A JSON payload as a frame whose id is its sequence and event its type. */
export function eventFrame(event: { seq: number; type: string }): string {
  return formatFrame({ id: event.seq, event: event.type, data: JSON.stringify(event) });
}

/** An open SSE response: headers are flushed at once, heartbeats run until close(). */
export class SseStream {
  private readonly res: Response;
  private heartbeat: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(res: Response, heartbeatMs: number) {
    this.res = res;
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('Connection', 'keep-alive');
    // nginx and friends: do not buffer this response.
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    this.heartbeat = setInterval(() => this.write(formatComment('ping')), heartbeatMs);
    this.heartbeat.unref();
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
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    if (this.ended) return;
    this.ended = true;
    if (!this.res.writableEnded && !this.res.destroyed) this.res.end();
  }
}
