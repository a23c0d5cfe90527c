/**
 * Issue 20 item 15: an API key in the query string neither authenticates (401 saying where the
 * key goes) nor reaches the request log. A real API process (LOG_LEVEL=info) and a real worker;
 * every line the API prints is captured, across routes, errors, 404s and SSE streams.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hashKey } from '@baton/api';
import {
  CreatedApiKeySchema,
  type CreateRunResponse,
  type ErrorBody,
  type RunSnapshot,
} from '@baton/protocol';
import { ApiClient } from '@baton/testing/api-harness';
import { spawnApi, stopAllApiProcesses, type ApiProcess } from '@baton/testing/api-process';
import { testPrefix, waitFor } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const KEY = 'QueryKeyLeak7f3a9c21e5b84d06';
const ADMIN = 'AdminQueryKey5e2d8b7a1c9f3046';
/** The ways a client might put a key in a URL. */
const PARAMS = ['api_key', 'apiKey', 'key', 'token', 'access_token', 'API%5FKEY', 'x-api-key'];
/** Names that say nothing of a key, and none at all (`?<key>`): the key is known by its value. */
const VALUE_ONLY = ['bearer', 'k', ''];

let api: ApiProcess;
let client: ApiClient;
const lines: string[] = [];

beforeAll(async () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  await spawnWorker({ redisUrl, prefix, agents: 'demo', probes: false });
  api = await spawnApi({
    redisUrl,
    prefix,
    keys: `tenant-a:${KEY}`,
    env: { LOG_LEVEL: 'info', ADMIN_KEYS: `ops:${ADMIN}` },
    onLine: (line) => lines.push(line),
  });
  client = new ApiClient(api.url, KEY);
}, 60_000);

afterAll(async () => {
  await stopAllApiProcesses();
  await stopAllWorkerProcesses();
});

let requestSeq = 0;

/** Sends a request whose URL carries the key in `param`; returns its request id and reply. */
async function send(
  method: string,
  path: string,
  param: string,
  opts: { header?: boolean; body?: unknown; sse?: boolean } = {},
): Promise<{ id: string; status: number; body: unknown }> {
  const id = `qk-${String(++requestSeq)}`;
  const sep = path.includes('?') ? '&' : '?';
  const headers: Record<string, string> = { 'x-request-id': id };
  if (opts.header) headers['authorization'] = `Bearer ${KEY}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.sse) headers['accept'] = 'text/event-stream';
  const res = await fetch(`${api.url}${path}${sep}${param === '' ? KEY : `${param}=${KEY}`}`, {
    method,
    headers,
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  const text = await res.text(); // an SSE stream of a finished run ends by itself
  const json: unknown = res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  return { id, status: res.status, body: json };
}

describe('an API key in the query string', () => {
  it('under a name that says nothing, or none, does not authenticate and is not echoed', async () => {
    for (const param of VALUE_ONLY) {
      const r = await send('GET', '/v1/agents', param);
      expect({ param, status: r.status }).toEqual({ param, status: 401 });
      expect(JSON.stringify(r.body)).not.toContain(KEY);
    }
  });

  it('does not authenticate: 401 saying where the key goes', async () => {
    for (const param of PARAMS) {
      const r = await send('GET', '/v1/agents', param);
      expect({ param, status: r.status }).toEqual({ param, status: 401 });
      const { error } = r.body as ErrorBody;
      expect(error.code).toBe('unauthorized');
      expect(error.message).toMatch(/query string/);
      expect(error.message).toMatch(/Authorization: Bearer <key> or X-API-Key/);
      expect(error.message).not.toContain(KEY);
    }
  });

  it('is never written to the log, whatever the route, status or stream', async () => {
    const { runId, threadId } = (
      await client.post<CreateRunResponse>('/v1/runs', {
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'hello' }] },
      })
    ).body;
    await waitFor(
      async () =>
        (await client.get<RunSnapshot>(`/v1/runs/${runId}`)).body.status === 'done' ? true : null,
      30_000,
      `run ${runId} to be done`,
    );
    const ids: string[] = [];
    const statuses = new Set<number>();
    for (const param of [...PARAMS, ...VALUE_ONLY]) {
      const requests: [string, string, { header?: boolean; body?: unknown; sse?: boolean }][] = [
        ['GET', '/v1/agents', {}],
        ['GET', '/v1/agents', { header: true }],
        ['GET', `/v1/runs/${runId}`, { header: true }],
        ['GET', `/v1/runs/${runId}/events`, { header: true, sse: true }],
        ['GET', `/v1/runs/${runId}/events?children=1`, { header: true, sse: true }],
        ['GET', `/v1/runs/${runId}/events`, { sse: true }],
        ['GET', `/v1/threads/${threadId}`, { header: true }],
        ['GET', '/v1/runs/nope', { header: true }],
        ['GET', '/v1/no-such-route', { header: true }],
        ['GET', '/no-such-route', {}],
        ['GET', '/openapi.json', {}],
        ['GET', '/healthz', {}],
        ['POST', '/v1/runs', { header: true, body: { agent: 'nope' } }],
        ['POST', '/v1/runs', { header: true, body: { bad: 1 } }],
        ['POST', '/v1/ag-ui', { header: true, body: { threadId: 't' } }],
        ['POST', '/v1/ai-sdk/chat', { header: true, body: { id: 'c' } }],
        ['DELETE', '/v1/runs/nope', { header: true }],
        ['GET', '/admin/queues/api/queues', {}],
      ];
      for (const [method, path, opts] of requests) {
        const r = await send(method, path, param, opts);
        ids.push(r.id);
        statuses.add(r.status);
      }
    }
    expect([...statuses].sort()).toEqual(expect.arrayContaining([200, 400, 401, 404]));
    // Every request has its log line (the SSE ones when they close).
    const logged = (): Set<string> => {
      const seen = new Set<string>();
      for (const line of lines) {
        const m = /"req":\{"id":"(qk-\d+)"/.exec(line);
        if (m) seen.add(m[1]!);
      }
      return seen;
    };
    await waitFor(
      () => Promise.resolve(ids.every((id) => logged().has(id)) ? true : null),
      30_000,
      'a request log line for every request',
    );
    const leaks = lines.filter((line) => line.includes(KEY));
    expect(leaks).toEqual([]);
    expect(lines.some((line) => line.includes('api_key=[redacted]'))).toBe(true);
    // The other parameters of a URL are kept.
    expect(lines.some((line) => line.includes('children=1&api_key=[redacted]'))).toBe(true);
  }, 120_000);

  it('a managed key (bk_…) or an identity-provider token in the URL is redacted, and managing keys logs no secret', async () => {
    const admin = new ApiClient(api.url, ADMIN);
    const created = CreatedApiKeySchema.parse(
      (await admin.post('/v1/admin/keys', { tenant: 'tenant-a' })).body,
    );
    const rotated = CreatedApiKeySchema.parse(
      (await admin.post(`/v1/admin/keys/${created.id}/rotate`, { graceSeconds: 60 })).body,
    );
    const jwt = `eyJhbGciOiJFUzI1NiJ9.${Buffer.from('{"iss":"x","sub":"alice"}').toString('base64url')}.${'s'.repeat(86)}`;
    const ids: string[] = [];
    for (const query of [`k=${created.key}`, rotated.key, `bearer=${jwt}`]) {
      const id = `qk-${String(++requestSeq)}`;
      ids.push(id);
      const res = await fetch(`${api.url}/v1/runs?${query}`, { headers: { 'x-request-id': id } });
      expect(res.status).toBe(401);
    }
    const id = `qk-${String(++requestSeq)}`;
    ids.push(id);
    expect(
      (
        await fetch(`${api.url}/v1/admin/keys/${rotated.id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${ADMIN}`, 'x-request-id': id },
        })
      ).status,
    ).toBe(204);
    await waitFor(
      () => Promise.resolve(ids.every((i) => lines.some((l) => l.includes(`"id":"${i}"`))) || null),
      30_000,
      'a request log line for every request',
    );
    for (const secret of [created.key, rotated.key, hashKey(created.key), jwt])
      expect(lines.filter((line) => line.includes(secret))).toEqual([]);
    expect(lines.some((line) => line.includes('managed API key revoked'))).toBe(true);
  }, 60_000);
});
