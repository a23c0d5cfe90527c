/**
 * A Server-Sent Events client on fetch streaming that parses frames with the rules a browser
 * EventSource uses (WHATWG HTML "event stream interpretation"): lines end with CRLF, LF or CR;
 * a blank line dispatches; `:` lines are comments; `field: value` loses one leading space;
 * `data` lines are joined with LF; `id` persists as the last event id (ignored if it has NUL);
 * an event with an empty data buffer is not dispatched; the default type is "message".
 */

export interface SseMessage {
  readonly type: string;
  readonly data: string;
  /** The stream's last event id when this message was dispatched. */
  readonly lastEventId: string;
}

export class SseParser {
  lastEventId = '';
  comments = 0;
  retry: number | undefined;
  private buffer = '';
  private data = '';
  private type = '';
  private sawData = false;
  private pendingCR = false;

  /** Feeds decoded text; returns the messages completed by it. */
  push(text: string): SseMessage[] {
    const out: SseMessage[] = [];
    let chunk = text;
    // A CR at the end of the previous chunk may be the first half of a CRLF.
    if (this.pendingCR && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.pendingCR = false;
    this.buffer += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      if (m[0] === '\r' && m.index === this.buffer.length - 1) this.pendingCR = true;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) {
      this.comments += 1;
      return null;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.type = value;
        break;
      case 'data':
        this.data += `${value}\n`;
        this.sawData = true;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default:
        break;
    }
    return null;
  }

  private dispatch(): SseMessage | null {
    if (!this.sawData) {
      this.type = '';
      return null;
    }
    const message = {
      type: this.type || 'message',
      data: this.data.endsWith('\n') ? this.data.slice(0, -1) : this.data,
      lastEventId: this.lastEventId,
    };
    this.data = '';
    this.type = '';
    this.sawData = false;
    return message;
  }
}

export interface StreamResult {
  readonly status: number;
  readonly headers: Headers;
  readonly messages: SseMessage[];
  /** True when the server ended the stream (false when we stopped or timed out). */
  readonly endedByServer: boolean;
  readonly lastEventId: string;
  readonly comments: number;
  /** The JSON error body of a non-200 response. */
  readonly body?: unknown;
}

export interface StreamOptions {
  readonly headers?: Record<string, string>;
  /** Return true to drop the connection after this message. */
  readonly stopWhen?: (message: SseMessage, all: readonly SseMessage[]) => boolean;
  readonly timeoutMs?: number;
  /** Each message as it arrives (a test that acts while the stream is open). */
  readonly onMessage?: (message: SseMessage) => void;
  /** Called once the server has answered 200, before any frame is read. */
  readonly onOpen?: () => void | Promise<void>;
}

/** Opens an SSE stream and reads it until the server ends it, stopWhen says so, or the timeout. */
export async function readStream(url: string, opts: StreamOptions = {}): Promise<StreamResult> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('timeout')), opts.timeoutMs ?? 15_000);
  const parser = new SseParser();
  const messages: SseMessage[] = [];
  try {
    const res = await fetch(url, {
      headers: { accept: 'text/event-stream', ...opts.headers },
      signal: controller.signal,
    });
    if (res.status !== 200 || !res.body) {
      const text = await res.text();
      return {
        status: res.status,
        headers: res.headers,
        messages,
        endedByServer: true,
        lastEventId: '',
        comments: 0,
        body: text ? (JSON.parse(text) as unknown) : undefined,
      };
    }
    await opts.onOpen?.();
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    let endedByServer = false;
    let stopped = false;
    try {
      while (!stopped) {
        const chunk: unknown = await reader.read();
        const { value, done } = chunk as { value?: Uint8Array; done: boolean };
        if (done) {
          endedByServer = true;
          break;
        }
        for (const m of parser.push(decoder.decode(value, { stream: true }))) {
          messages.push(m);
          opts.onMessage?.(m);
          if (opts.stopWhen?.(m, messages)) {
            stopped = true;
            break;
          }
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
    controller.abort();
    return {
      status: res.status,
      headers: res.headers,
      messages,
      endedByServer,
      lastEventId: parser.lastEventId,
      comments: parser.comments,
    };
  } finally {
    clearTimeout(timer);
  }
}
