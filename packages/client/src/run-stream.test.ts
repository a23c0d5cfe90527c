import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunEvent } from '@baton/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { BatonClient } from './client.ts';
import type { ReconnectInfo } from './run-stream.ts';

/**
 * The stream's bookkeeping (dedupe, gap refetch, reconnect, give-up) against scripted SSE
 * responses from a real HTTP server. The real API never skips or repeats a seq on one
 * connection, so these cases can only be provoked here; the integration tests cover the API.
 */

const delta = (seq: number): RunEvent => ({
  seq,
  runId: 'r1',
  threadId: 't',
  turnId: 'u',
  at: 0,
  type: 'text.delta',
  step: 1,
  messageId: 'm',
  delta: `d${seq}`,
});
const finished = (seq: number): RunEvent => ({
  seq,
  runId: 'r1',
  threadId: 't',
  turnId: 'u',
  at: 0,
  type: 'run.finished',
  status: 'done',
  termination: { kind: 'natural_end' },
  usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
});
const frame = (e: RunEvent): string =>
  `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

type Handler = (req: IncomingMessage, res: ServerResponse, connection: number) => void;

let server: Server | undefined;
afterEach(async () => {
  const s = server;
  s?.closeAllConnections();
  if (s) await new Promise((r) => s.close(r));
  server = undefined;
});

async function serve(
  handler: Handler,
): Promise<{ client: BatonClient; lastEventIds: (string | undefined)[] }> {
  const lastEventIds: (string | undefined)[] = [];
  server = createServer((req, res) => {
    lastEventIds.push(req.headers['last-event-id'] as string | undefined);
    handler(req, res, lastEventIds.length);
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    client: new BatonClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k' }),
    lastEventIds,
  };
}

const sse = (res: ServerResponse): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
};

async function collect(stream: AsyncIterable<RunEvent>): Promise<number[]> {
  const seqs: number[] = [];
  for await (const e of stream) seqs.push(e.seq);
  return seqs;
}

const fast = { initialDelayMs: 1, maxDelayMs: 5, maxAttempts: 5 };

describe('RunEventStream', () => {
  it('drops replayed events and refetches after a skipped one, yielding 1..N once', async () => {
    const { client, lastEventIds } = await serve((_req, res, n) => {
      sse(res);
      if (n === 1) res.end([1, 2, 3, 5].map((s) => frame(delta(s))).join(''));
      else res.end([2, 3, 4, 5].map((s) => frame(delta(s))).join('') + frame(finished(6)));
    });
    const stream = client.runs.stream('r1', { reconnect: fast });
    expect(await collect(stream)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(lastEventIds).toEqual([undefined, '3']);
    expect(stream.duplicatesDropped).toBe(2);
    expect(stream.reconnects).toBe(1);
  });

  it('a stream the server ends early is resumed from the last seq; 204 ends it', async () => {
    const reconnects: ReconnectInfo[] = [];
    const { client, lastEventIds } = await serve((_req, res, n) => {
      if (n === 3) {
        res.writeHead(204).end();
        return;
      }
      sse(res);
      res.end(frame(delta(n)));
    });
    const seqs = await collect(
      client.runs.stream('r1', {
        after: 0,
        reconnect: fast,
        onReconnect: (i) => reconnects.push(i),
      }),
    );
    expect(seqs).toEqual([1, 2]);
    expect(lastEventIds).toEqual([undefined, '1', '2']);
    expect(reconnects.map((r) => r.lastSeq)).toEqual([1, 2]);
  });

  it('a 5xx answer is retried', async () => {
    const { client } = await serve((_req, res, n) => {
      if (n === 1) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'internal', message: 'restarting' } }));
        return;
      }
      sse(res);
      res.end(frame(finished(1)));
    });
    expect(await collect(client.runs.stream('r1', { reconnect: fast }))).toEqual([1]);
  });

  it('a 4xx answer is thrown at once, not retried', async () => {
    const notFound = await serve((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'run_not_found', message: 'no such run' } }));
    });
    await expect(
      collect(notFound.client.runs.stream('r1', { reconnect: fast })),
    ).rejects.toMatchObject({
      code: 'run_not_found',
    });
    expect(notFound.lastEventIds).toHaveLength(1);
  });

  it('gives up after maxAttempts failures in a row, with the last failure as cause', async () => {
    const { client, lastEventIds } = await serve((_req, res) => {
      res.writeHead(502).end('bad gateway');
    });
    await expect(
      collect(client.runs.stream('r1', { reconnect: { ...fast, maxAttempts: 3 } })),
    ).rejects.toMatchObject({
      code: 'reconnect_exhausted',
      cause: { code: 'unexpected_response', status: 502 },
    });
    expect(lastEventIds).toHaveLength(4);
  });

  it('a silent connection is replaced after idleTimeoutMs', async () => {
    const { client, lastEventIds } = await serve((_req, res, n) => {
      sse(res);
      if (n === 1)
        res.write(frame(delta(1))); // then nothing: no heartbeat, no end
      else res.end(frame(finished(2)));
    });
    expect(
      await collect(client.runs.stream('r1', { idleTimeoutMs: 100, reconnect: fast })),
    ).toEqual([1, 2]);
    expect(lastEventIds).toEqual([undefined, '1']);
  });

  it("the caller's abort stops it with an aborted error", async () => {
    const { client } = await serve((_req, res) => {
      sse(res);
      res.write(frame(delta(1)));
    });
    const controller = new AbortController();
    const seqs: number[] = [];
    const error = await (async () => {
      for await (const e of client.runs.stream('r1', { signal: controller.signal })) {
        seqs.push(e.seq);
        controller.abort();
      }
    })().catch((e: unknown) => e);
    expect(seqs).toEqual([1]);
    expect(error).toMatchObject({ code: 'aborted' });
  });

  it('an event that is not the protocol is an error, not a retry', async () => {
    const { client } = await serve((_req, res) => {
      sse(res);
      res.end('id: 1\ndata: {"seq":1,"type":"nonsense"}\n\n');
    });
    await expect(collect(client.runs.stream('r1', { reconnect: fast }))).rejects.toMatchObject({
      code: 'unexpected_response',
    });
  });

  it('an event type a newer API sends is skipped in order and the stream goes on', async () => {
    const newer = {
      seq: 2,
      runId: 'r1',
      threadId: 't',
      turnId: 'u',
      at: 0,
      type: 'run.forked_later',
      extra: 1,
    };
    const { client } = await serve((_req, res) => {
      sse(res);
      res.end(`${frame(delta(1))}id: 2\ndata: ${JSON.stringify(newer)}\n\n${frame(finished(3))}`);
    });
    const stream = client.runs.stream('r1', { reconnect: fast });
    expect(await collect(stream)).toEqual([1, 3]);
    expect(stream.unknownSkipped).toBe(1);
    expect(stream.lastSeq).toBe(3);
  });

  it('an event of a known type with a bad body is still an error', async () => {
    const { client } = await serve((_req, res) => {
      sse(res);
      res.end(`id: 1\ndata: ${JSON.stringify({ ...delta(1), delta: 5 })}\n\n`);
    });
    await expect(collect(client.runs.stream('r1', { reconnect: fast }))).rejects.toMatchObject({
      code: 'unexpected_response',
    });
  });
});

describe('RunEventStream of a run tree (children: true)', () => {
  const of = (runId: string, e: RunEvent): RunEvent => ({ ...e, runId });
  const linked = (seq: number, childRunId: string): RunEvent => ({
    seq,
    runId: 'r1',
    threadId: 't',
    turnId: 'u',
    at: 0,
    type: 'child_run.linked',
    link: {
      childRunId,
      childAgentId: 'child',
      toolCallId: 'c1',
      toolName: 'ask',
      attempt: 0,
      threadId: 't',
    },
  });
  const treeFrame = (e: RunEvent, id: string): string =>
    `id: ${id}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

  it('numbers events per run, resumes with the composite cursor, ends when the API settles', async () => {
    const urls: string[] = [];
    const { client, lastEventIds } = await serve((req, res, n) => {
      urls.push(req.url ?? '');
      sse(res);
      if (n === 1) {
        res.write(treeFrame(delta(1), '1'));
        res.write(treeFrame(linked(2, 'r1.s1c0'), '2;s1c0=0'));
        res.write(treeFrame(of('r1.s1c0', delta(1)), '2;s1c0=1'));
        res.end(); // dropped mid-tree
      } else {
        // a replay of what the first connection sent is dropped, per run
        res.write(treeFrame(of('r1.s1c0', delta(1)), '2;s1c0=1'));
        res.write(treeFrame(of('r1.s1c0', finished(2)), '2;s1c0=2'));
        res.write(treeFrame(finished(3), '3;s1c0=2'));
        res.end(); // the API closes once every run of the tree is done
      }
    });
    const events: RunEvent[] = [];
    for await (const e of client.runs.stream('r1', { children: true, reconnect: fast }))
      events.push(e);
    expect(events.map((e) => `${e.runId}:${e.seq}`)).toEqual([
      'r1:1',
      'r1:2',
      'r1.s1c0:1',
      'r1.s1c0:2',
      'r1:3',
    ]);
    expect(lastEventIds).toEqual([undefined, '2;s1c0=1']);
    expect(urls.every((u) => u.includes('children=1'))).toBe(true);
  });

  it("a skipped seq of a child run is a gap, like the root's", async () => {
    const { client } = await serve((_req, res) => {
      sse(res);
      res.write(treeFrame(linked(1, 'r1.s1c0'), '1;s1c0=0'));
      res.end(treeFrame(of('r1.s1c0', delta(2)), '1;s1c0=2'));
    });
    await expect(
      collect(
        client.runs.stream('r1', {
          children: true,
          reconnect: { initialDelayMs: 1, maxDelayMs: 1, maxAttempts: 1 },
        }),
      ),
    ).rejects.toMatchObject({ code: 'reconnect_exhausted', cause: { code: 'stream_gap' } });
  });
});
