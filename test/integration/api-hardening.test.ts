import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import type { ErrorBody, RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import {
  ApiClient,
  KEYS,
  startApiCluster,
  type ApiCluster,
  type Reply,
} from '@baton/testing/api-harness';

// The body is whatever came back (a malformed request may not get JSON): checked, not trusted.
const expectError = (r: { status: number; body: unknown }, status: number, code: string): void => {
  const body = r.body as Partial<ErrorBody> | undefined;
  expect({ status: r.status, code: body?.error?.code }).toEqual({ status, code });
  expect(typeof body!.error!.message).toBe('string');
};

const deep = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;

/** Opens a raw connection; resolves with everything received once the server closes it. */
function rawRequest(
  url: string,
  head: string,
): { socket: Socket; closed: Promise<{ data: string; at: number }> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.setEncoding('utf8');
  socket.write(head);
  let data = '';
  socket.on('data', (chunk: string) => (data += chunk));
  const closed = new Promise<{ data: string; at: number }>((resolve) => {
    socket.on('close', () => resolve({ data, at: Date.now() }));
    socket.on('error', () => undefined);
  });
  return { socket, closed };
}

describe('hardening: every bad input is a 4xx', () => {
  let c: ApiCluster;
  let a: ApiClient;
  let admin: ApiClient;
  let waitingRun: string;
  let waitingCall: string;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: { REQUEST_TIMEOUT_MS: '1500', HEADERS_TIMEOUT_MS: '1000' },
    });
    a = new ApiClient(c.apis[0]!.url, KEYS.a);
    admin = new ApiClient(c.apis[0]!.url, KEYS.admin);
    waitingRun = (await a.createRun('assistant')).runId;
    await a.stream(`/v1/runs/${waitingRun}/events?until=suspended`);
    waitingCall = (await a.get<RunSnapshot>(`/v1/runs/${waitingRun}`)).body.await!.calls[0]!
      .toolCallId;
  });
  afterAll(async () => {
    await a.post(`/v1/runs/${waitingRun}/cancel`);
    await c.stop();
  });

  it('a malformed %-escape in any URL id is a 400', async () => {
    for (const path of [
      '/v1/threads/%ZZ',
      '/v1/threads/%ZZ/runs',
      '/v1/runs/%E0%A4%A',
      '/v1/runs/%ZZ/events',
      '/v1/agents/%',
      '/v1/ai-sdk/chat/%ZZ/stream',
    ])
      expectError(await a.get(path), 400, 'bad_request');
    for (const path of ['/v1/runs/%ZZ/decisions', '/v1/runs/%ZZ/cancel'])
      expectError(await a.post(path, {}), 400, 'bad_request');
  });

  it('a Content-Encoding the body does not have is a 400', async () => {
    for (const encoding of ['gzip', 'deflate', 'br'])
      expectError(
        await a.post('/v1/runs', '{"agent":"assistant"}', { 'content-encoding': encoding }),
        400,
        'bad_request',
      );
    // body-parser's own 415s keep their status
    expectError(
      await a.post('/v1/runs', '{"agent":"assistant"}', { 'content-encoding': 'zzz' }),
      415,
      'unsupported_media_type',
    );
    expectError(
      await a.post('/v1/runs', '{}', { 'content-type': 'application/json; charset=latin1' }),
      415,
      'unsupported_media_type',
    );
    // really compressed bodies are fine
    const body = gzipSync(
      JSON.stringify({ decisions: [{ toolCallId: 'nope', action: 'cancel' }] }),
    );
    const res = await fetch(`${a.base}/v1/runs/${waitingRun}/decisions`, {
      method: 'POST',
      headers: {
        ...a.authHeaders(),
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      body,
    });
    expect(res.status).toBe(409);
  });

  it('JSON nested 5,000 deep is refused with 413 on every body-taking route', async () => {
    const cases: [string, string][] = [
      [
        `/v1/runs/${waitingRun}/decisions`,
        `{"decisions":[{"toolCallId":"${waitingCall}","action":"resume","payload":${deep(5_000)}}]}`,
      ],
      [
        '/v1/runs',
        `{"agent":"assistant","input":{"messages":[{"role":"user","content":${deep(5_000)}}]}}`,
      ],
      [
        '/v1/ai-sdk/chat',
        `{"id":"t1","messages":[{"id":"m","role":"assistant","parts":[{"type":"tool-x","output":${deep(5_000)}}]}]}`,
      ],
      [
        '/v1/ag-ui',
        `{"threadId":"t1","runId":"r","messages":[],"resume":[{"interruptId":"x","status":"resolved","payload":${deep(5_000)}}]}`,
      ],
    ];
    for (const [path, body] of cases) {
      const r = await a.post<ErrorBody>(path, body);
      expectError(r, 413, 'payload_too_large');
      expect(r.body.error.message).toMatch(/levels deep/);
    }
    expect((await a.get<RunSnapshot>(`/v1/runs/${waitingRun}`)).body.status).toBe('waiting');
  });

  it('Bull Board: bad query strings and paths are 400, not 500', async () => {
    for (const path of [
      '/admin/queues/api/queues?status=%00',
      '/admin/queues/api/queues?activeQueue=%ZZ',
      '/admin/queues/api/queues?activeQueue=%25ZZ',
      '/admin/queues/api/queues?status=nope&activeQueue=steps',
      '/admin/queues/api/queues/steps/%ZZ',
    ])
      expectError(await admin.get(path), 400, 'bad_request');
    expect((await admin.get('/admin/queues/api/queues?status=latest')).status).toBe(200);
  });

  it('content_match patterns are RE2: backtracking-only syntax and oversized patterns are 400', async () => {
    const create = (pattern: string): Promise<Reply<ErrorBody>> =>
      a.post<ErrorBody>('/v1/runs', {
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'hi' }] },
        options: { stopConditions: [{ type: 'content_match', pattern }] },
      });
    for (const pattern of ['(a)\\1', '(?=x)y', 'x'.repeat(600), '(?:a?){900}a{900}']) {
      const r = await create(pattern);
      expectError(r, 400, 'validation_failed');
      const { issues } = r.body.error.details as { issues: { path: string }[] };
      expect(issues[0]!.path).toBe('options.stopConditions[0].pattern');
    }
  });

  it('a tool call id naming a prototype member is call_unknown', async () => {
    for (const toolCallId of ['__proto__', 'constructor', 'toString', 'hasOwnProperty'])
      expectError(
        await a.post(`/v1/runs/${waitingRun}/decisions`, {
          decisions: [{ toolCallId, action: 'resume' }],
        }),
        409,
        'call_unknown',
      );
  });

  it('AG-UI input with wrong types is a 400 JSON error, not a RUN_ERROR stream', async () => {
    const valid = { threadId: 'agui-types', runId: 'r1', messages: [] };
    for (const body of [
      { ...valid, threadId: 123 },
      { ...valid, messages: 'x' },
      { threadId: 'agui-types', messages: [] },
      { ...valid, threadId: 'has space' },
      { ...valid, resume: [{ interruptId: 'i', status: 'maybe' }] },
    ]) {
      const r = await a.post('/v1/ag-ui', body);
      expectError(r, 400, 'validation_failed');
      expect(r.headers.get('content-type')).toMatch(/json/);
    }
  });

  it('a request body trickled slower than REQUEST_TIMEOUT_MS is cut off', async () => {
    const started = Date.now();
    const { socket, closed } = rawRequest(
      c.apis[0]!.url,
      `POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.a}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
    );
    const trickle = setInterval(() => socket.writable && socket.write(' '), 200);
    const { data, at } = await closed;
    clearInterval(trickle);
    expect(data).toMatch(/^HTTP\/1\.1 408/);
    expect(at - started).toBeLessThan(10_000);
  });

  it('an unauthenticated request is answered 401 and its connection closed without reading the body', async () => {
    const { socket, closed } = rawRequest(
      c.apis[0]!.url,
      'POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
    );
    const trickle = setInterval(() => socket.writable && socket.write(' '), 50);
    const { data } = await closed;
    clearInterval(trickle);
    expect(data).toMatch(/^HTTP\/1\.1 401/);
    expect(data).toMatch(/connection: close/i);
    expect(data).toContain('"unauthorized"');
  });
});
