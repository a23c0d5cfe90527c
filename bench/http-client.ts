/** node:http keep-alive JSON client of the HTTP scenarios, and GET /metrics readers. */
import { Agent, request } from 'node:http';
import { BenchError } from './lib.ts';

export interface Client {
  readonly base: URL;
  readonly key: string;
  readonly agent: Agent;
}

export interface HttpReply {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
}

export function httpJson(
  c: Client,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<HttpReply> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: c.base.hostname,
        port: c.base.port,
        path,
        method,
        agent: c.agent,
        timeout: timeoutMs,
        headers: {
          authorization: `Bearer ${c.key}`,
          ...(body === undefined
            ? {}
            : {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(payload),
              }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            parsed = undefined; // e.g. /metrics: the caller reads `text`
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, text });
        });
      },
    );
    req.on('timeout', () => req.destroy(new BenchError(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export async function postJson(
  c: Client,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  return httpJson(c, 'POST', path, body, timeoutMs);
}

/** POST that must answer `expected` (default 202); returns the parsed body. */
export async function mustPost<T>(
  c: Client,
  path: string,
  body: unknown,
  timeoutMs: number,
  expected = 202,
): Promise<T> {
  const reply = await httpJson(c, 'POST', path, body, timeoutMs);
  if (reply.status !== expected)
    throw new BenchError(`POST ${path}: HTTP ${reply.status} ${reply.text.slice(0, 300)}`);
  return reply.body as T;
}

export async function mustGet<T>(c: Client, path: string, timeoutMs: number): Promise<T> {
  const reply = await httpJson(c, 'GET', path, undefined, timeoutMs);
  if (reply.status !== 200)
    throw new BenchError(`GET ${path}: HTTP ${reply.status} ${reply.text.slice(0, 300)}`);
  return reply.body as T;
}

/** The value of one Prometheus sample in a /metrics text (first line matching name + labels). */
export function metricIn(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

/** GET /metrics as text (the stack sets METRICS_PUBLIC=true). */
export async function metricsText(c: Client, timeoutMs: number): Promise<string> {
  return (await httpJson(c, 'GET', '/metrics', undefined, timeoutMs)).text;
}

/** One Prometheus sample from GET /metrics. */
export async function metricValue(
  c: Client,
  name: string,
  labels: Record<string, string>,
  timeoutMs: number,
): Promise<number | undefined> {
  return metricIn(await metricsText(c, timeoutMs), name, labels);
}

/** Every sample of a metric from GET /metrics, as [labels text, value]. */
export async function metricSamples(
  c: Client,
  name: string,
  timeoutMs: number,
): Promise<[string, number][]> {
  const { text } = await httpJson(c, 'GET', '/metrics', undefined, timeoutMs);
  const out: [string, number][] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    out.push([line.slice(name.length + 1, close), Number(line.slice(close + 2))]);
  }
  return out;
}

export function runBody(agent: string, content: string, extra: Record<string, unknown> = {}) {
  return { agent, input: { messages: [{ role: 'user', content }] }, ...extra };
}
