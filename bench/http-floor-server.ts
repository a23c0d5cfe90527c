/**
 * API of the HTTP floor (bench/http-floor.ts): the least a correct API for one run must do, on
 * bare node:http (no express, no Baton code), with the same routes the Baton clients use.
 *
 * POST /v1/runs: bearer token compared in constant time, JSON body read (≤ 1 MiB) and parsed,
 * `agent` and `input.messages` checked by hand, the run's first job (a raw BullMQ 3-job chain,
 * carrying the input) added, 202 `{runId}`.
 * GET /v1/runs/:id/events: bearer checked, the cursor from Last-Event-ID or `?after=`; SUBSCRIBE
 * to the run's channel first (one shared connection, one subscription per run with listeners),
 * XRANGE the run's stream after the cursor second, so nothing committed in between is missed;
 * then live pub/sub messages, de-duplicated by seq, as `id:`/`data:` frames; the stream ends on
 * the event that ends the run. The run's keys carry the token's tenant, so a run of another
 * tenant is never read. Left out (the floor is a lower bound): a 404 for an unknown run,
 * heartbeats, limits, logs, metrics.
 * Env: REDIS_URL, FLOOR_BULL_PREFIX, FLOOR_KEY_PREFIX, FLOOR_TENANT, FLOOR_TOKEN,
 * FLOOR_CHAIN_LENGTH. Prints `LISTENING <url>`.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  floorKeys,
  parseFloorMessage,
  type FloorLink,
  type FloorMessage,
} from './http-floor-protocol.ts';
import { rawJobOptions } from './raw-job-options.ts';

const url = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const bullPrefix = process.env['FLOOR_BULL_PREFIX'] ?? 'floor-bull';
const keyPrefix = process.env['FLOOR_KEY_PREFIX'] ?? 'floor';
const tenant = process.env['FLOOR_TENANT'] ?? 'floor';
const token = Buffer.from(process.env['FLOOR_TOKEN'] ?? '');
const chainLength = Number(process.env['FLOOR_CHAIN_LENGTH'] ?? '3');
const MAX_BODY_BYTES = 1 << 20;
const MAX_MESSAGES = 1000;

const redis = new Redis(url, { maxRetriesPerRequest: null, connectionName: 'floor-api' });
const sub = new Redis(url, { maxRetriesPerRequest: null, connectionName: 'floor-api-sub' });
const queue = new Queue('floor', {
  connection: { url, maxRetriesPerRequest: null },
  prefix: bullPrefix,
});

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function authorized(req: IncomingMessage): boolean {
  const header = req.headers.authorization;
  if (header === undefined || !header.startsWith('Bearer ')) return false;
  const given = Buffer.from(header.slice(7));
  return given.length === token.length && timingSafeEqual(given, token);
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () =>
      resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8')),
    );
    req.on('error', reject);
  });
}

/** `{ agent: string, input: { messages: [{ role, content: string }, ...] } }`, by hand. */
function validRun(body: unknown): body is { agent: string; input: { messages: unknown[] } } {
  if (body === null || typeof body !== 'object') return false;
  const { agent, input } = body as { agent?: unknown; input?: unknown };
  if (typeof agent !== 'string' || agent.length === 0 || agent.length > 128) return false;
  if (input === null || typeof input !== 'object') return false;
  const { messages } = input as { messages?: unknown };
  if (!Array.isArray(messages) || messages.length === 0 || messages.length > MAX_MESSAGES)
    return false;
  return messages.every((m: unknown) => {
    if (m === null || typeof m !== 'object') return false;
    const { role, content } = m as { role?: unknown; content?: unknown };
    return (role === 'user' || role === 'system') && typeof content === 'string';
  });
}

async function createRun(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const text = await readBody(req);
  if (text === undefined) return reply(res, 413, { error: 'body too large' });
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return reply(res, 400, { error: 'body is not JSON' });
  }
  if (!validRun(body)) return reply(res, 400, { error: 'agent and input.messages required' });
  const runId = randomUUID();
  const first: FloorLink = { tenant, runId, i: 0, length: chainLength, input: body.input };
  await queue.add('link', first, rawJobOptions(`${runId}.0`));
  reply(res, 202, { runId });
}

interface Listener {
  readonly res: ServerResponse;
  lastSeq: number;
  /** Messages that arrived before the stored events were written; null once live. */
  early: FloorMessage[] | null;
}

const channels = new Map<string, { listeners: Set<Listener>; ready: Promise<unknown> }>();

function detach(channel: string, l: Listener): void {
  const entry = channels.get(channel);
  if (!entry?.listeners.delete(l) || entry.listeners.size > 0) return;
  channels.delete(channel);
  sub.unsubscribe(channel).catch(() => undefined);
}

function deliver(channel: string, l: Listener, m: FloorMessage): void {
  if (l.early !== null) {
    l.early.push(m);
    return;
  }
  if (m.seq <= l.lastSeq || l.res.writableEnded) return;
  l.lastSeq = m.seq;
  const frame = `id: ${m.seq}\ndata: ${m.json}\n\n`;
  if (!m.final) {
    l.res.write(frame);
    return;
  }
  l.res.end(frame);
  detach(channel, l);
}

sub.on('message', (channel: string, message: string) => {
  const entry = channels.get(channel);
  if (!entry) return;
  const m = parseFloorMessage(message);
  for (const l of entry.listeners) deliver(channel, l, m);
});

function cursorOf(req: IncomingMessage, query: string): number | undefined {
  const header = req.headers['last-event-id'];
  const raw =
    typeof header === 'string' ? header.trim() : (new URLSearchParams(query).get('after') ?? '0');
  return /^\d{1,15}$/.test(raw) ? Number(raw) : undefined;
}

async function streamEvents(
  req: IncomingMessage,
  res: ServerResponse,
  runId: string,
  query: string,
): Promise<void> {
  const after = cursorOf(req, query);
  if (after === undefined) return reply(res, 400, { error: 'bad Last-Event-ID / after' });
  const { stream, channel } = floorKeys(keyPrefix, tenant, runId);
  const l: Listener = { res, lastSeq: after, early: [] };
  let entry = channels.get(channel);
  if (!entry) {
    entry = { listeners: new Set(), ready: sub.subscribe(channel) };
    channels.set(channel, entry);
  }
  entry.listeners.add(l);
  res.on('close', () => detach(channel, l));
  await entry.ready;
  const stored = await redis.xrange(stream, `${after}-1`, '+');
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.socket?.setNoDelay(true);
  let frames = '';
  for (const [id, fields] of stored) {
    const seq = Number.parseInt(id, 10);
    if (seq <= l.lastSeq) continue;
    l.lastSeq = seq;
    frames += `id: ${seq}\ndata: ${fields[1]}\n\n`;
    if (fields[0] === 'f') {
      res.end(frames);
      detach(channel, l);
      return;
    }
  }
  if (frames === '') res.flushHeaders();
  else res.write(frames);
  const early = l.early ?? [];
  l.early = null;
  for (const m of early) deliver(channel, l, m);
}

const EVENTS_PATH = /^\/v1\/runs\/([\w-]{1,64})\/events$/;

const server = createServer((req, res) => {
  const full = req.url ?? '';
  const q = full.indexOf('?');
  const path = q < 0 ? full : full.slice(0, q);
  const query = q < 0 ? '' : full.slice(q + 1);
  if (!authorized(req)) {
    req.resume();
    reply(res, 401, { error: 'unauthorized' });
    return;
  }
  let work: Promise<void> | undefined;
  if (req.method === 'POST' && path === '/v1/runs') work = createRun(req, res);
  else if (req.method === 'GET') {
    const m = EVENTS_PATH.exec(path);
    if (m) work = streamEvents(req, res, m[1] as string, query);
  }
  if (work === undefined) {
    req.resume();
    reply(res, 404, { error: 'not found' });
    return;
  }
  work.catch((error: unknown) => {
    if (!res.headersSent) reply(res, 503, { error: String(error) });
    else res.end();
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object')
    process.stdout.write(`LISTENING http://127.0.0.1:${address.port}\n`);
});
process.on('SIGTERM', () => {
  void (async () => {
    server.close();
    await queue.close();
    redis.disconnect();
    sub.disconnect();
    process.exit(0);
  })();
});
