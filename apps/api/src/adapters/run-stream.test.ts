import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '@baton/protocol';
import type { ApiContext } from '../context.ts';
import { RunStream, type FrameSink } from './run-stream.ts';

/**
 * A protocol stream is an SseConnection like the native event stream's (issue 33): the shared
 * heartbeat pings it, the API's shutdown (ctx.streams) ends it with the protocol's closing
 * frames, and it gives back its stream slot and subscription.
 */
/** What RunStream hands openEvents' follow. */
interface EventHandlers {
  onEvent(event: RunEvent): void;
}

interface Fixture {
  readonly ctx: ApiContext;
  readonly log: string[];
  handlers: EventHandlers | null;
}

function fixture(): Fixture {
  const log: string[] = [];
  const f: Fixture = {
    log,
    handlers: null,
    ctx: {
      config: { SSE_HEARTBEAT_MS: 20 },
      metrics: {
        sseConnections: { inc: () => log.push('open'), dec: () => log.push('close') },
        sseEventLag: { observe: () => undefined },
      },
      streams: new Set<() => void>(),
      sseLimiter: { acquire: () => Promise.resolve(() => log.push('slot released')) },
      service: {
        openEvents: () =>
          Promise.resolve({
            archived: false,
            follow: (handlers: EventHandlers) => {
              f.handlers = handlers;
              return Promise.resolve(() => {
                log.push('unsubscribed');
                return Promise.resolve();
              });
            },
          }),
      },
    } as unknown as ApiContext,
  };
  return f;
}

const sink = (): FrameSink & { done: boolean } => ({
  done: false,
  map: (event: RunEvent) => [`data: ${event.type}\n\n`],
  end: () => ['data: end\n\n'],
  error: (message: string) => [`data: error ${message}\n\n`],
  trailer: 'data: [DONE]\n\n',
});

let close: (() => void) | undefined;
afterEach(() => close?.());

async function serve(f: Fixture): Promise<string> {
  const app = express();
  app.get('/stream', async (_req, res) => {
    const stream = await RunStream.attach(f.ctx, 'tenant-a', 'r1', 0);
    stream.open(res, { 'content-type': 'text/event-stream', 'x-protocol': 'test' }, sink());
  });
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  close = () => server.close();
  return `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/stream`;
}

/** Reads the response until `until` holds of what arrived (or the stream ends). */
async function readUntil(body: ReadableStream<Uint8Array>, until: (text: string) => boolean) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) text += decoder.decode(value, { stream: true });
    if (done || until(text)) return { text, reader };
  }
}

describe('RunStream on the shared SSE connection', () => {
  it('has the protocol headers, is pinged by the shared heartbeat, and ends on shutdown with its closing frames', async () => {
    const f = fixture();
    const res = await fetch(await serve(f));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-protocol')).toBe('test');
    f.handlers?.onEvent({ seq: 1, type: 'run.created', at: Date.now() } as RunEvent);
    const first = await readUntil(res.body!, (t) => t.includes(': ping'));
    expect(first.text).toContain('data: run.created\n\n');
    expect(f.ctx.streams.size).toBe(1);
    // The API's close(): every open stream is finished.
    for (const finish of [...f.ctx.streams]) finish();
    let rest = '';
    for (;;) {
      const { value, done } = await first.reader.read();
      if (value) rest += new TextDecoder().decode(value);
      if (done) break;
    }
    expect(rest.replaceAll(': ping\n\n', '')).toBe('data: end\n\ndata: [DONE]\n\n');
    expect(f.log).toEqual(['open', 'slot released', 'close', 'unsubscribed']);
    expect(f.ctx.streams.size).toBe(0);
  });
});
