/**
 * Baseline of the sse-fanout scenario: the plainest SSE fan-out over Redis pub/sub. A node:http
 * server (no express, no auth, no durable log, no limits) where GET /s/<channel> SUBSCRIBEs one
 * shared ioredis connection to <channel> (reference-counted) and writes every message as a
 * `data:` frame to each of the channel's responses; a message containing `"last":true` ends them.
 * Prints `LISTENING <url>`. Env: REDIS_URL.
 */
import { createServer, type ServerResponse } from 'node:http';
import { Redis } from 'ioredis';

const sub = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
  connectionName: 'bench-sse-echo',
});
const channels = new Map<string, Set<ServerResponse>>();

sub.on('message', (channel: string, message: string) => {
  const set = channels.get(channel);
  if (!set) return;
  const frame = `data: ${message}\n\n`;
  const last = message.includes('"last":true');
  for (const res of set) {
    res.write(frame);
    if (last) res.end();
  }
  if (last) {
    channels.delete(channel);
    void sub.unsubscribe(channel);
  }
});

const server = createServer((req, res) => {
  const m = /^\/s\/([\w.-]+)$/.exec(req.url ?? '');
  if (!m) {
    res.writeHead(404).end();
    return;
  }
  const channel = m[1] as string;
  let set = channels.get(channel);
  const ready = set ? Promise.resolve() : sub.subscribe(channel).then(() => undefined);
  if (!set) channels.set(channel, (set = new Set()));
  set.add(res);
  res.on('close', () => set.delete(res));
  void ready.then(() => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
  });
});
server.keepAliveTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object')
    process.stdout.write(`LISTENING http://127.0.0.1:${address.port}\n`);
});
process.on('SIGTERM', () => {
  sub.disconnect();
  process.exit(0);
});
