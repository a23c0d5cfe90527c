/**
 * Test fixture: a real HTTP server that receives webhooks and answers as a script says, per
 * path and per webhook-id (so every message of a run sees the same sequence of answers).
 *
 *   const rx = await startWebhookReceiver((path, nth) => (nth === 1 ? 500 : nth === 2 ? 'hang' : 204));
 *   … rx.url('/hooks') …; rx.received; await rx.close();
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** 1 for the first request with this path and webhook-id, 2 for the second … */
  readonly nth: number;
  readonly at: number;
}

/** A status to answer with, or 'hang': read the request and never answer. */
export type Answer = number | 'hang';

export interface WebhookReceiver {
  url(path: string): string;
  readonly received: ReceivedWebhook[];
  /** Requests to `path` (all webhook ids), in arrival order. */
  on(path: string): ReceivedWebhook[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(
  answer: (path: string, nth: number) => Answer,
): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const counts = new Map<string, number>();
  const hanging = new Set<ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const key = `${path}\n${headers['webhook-id'] ?? ''}`;
      const nth = (counts.get(key) ?? 0) + 1;
      counts.set(key, nth);
      received.push({
        path,
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        nth,
        at: Date.now(),
      });
      const what = answer(path, nth);
      if (what === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      res.statusCode = what;
      res.end(what === 204 ? undefined : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    received,
    on: (path) => received.filter((r) => r.path === path),
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
