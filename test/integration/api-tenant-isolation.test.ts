import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import type { RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { monitorCommands } from '@baton/testing/redis-monitor';

/** Headers that may legitimately differ between two answers (ids, dates, lengths of ids). */
const VARYING = new Set(['date', 'x-request-id', 'content-length', 'etag', 'keep-alive']);

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

async function answer(
  base: string,
  key: string,
  method: string,
  path: string,
  id: string,
  body?: unknown,
): Promise<Answer> {
  const res = await fetch(`${base}${path.replaceAll(':id', encodeURIComponent(id))}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body).replaceAll(':id', id) }),
    signal: AbortSignal.timeout(5_000),
  });
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!VARYING.has(name)) headers[name] = value;
  });
  // The id itself is echoed in messages: compare everything else.
  return { status: res.status, headers, body: (await res.text()).replaceAll(id, '<id>') };
}

describe("another tenant's id answers exactly like a missing id", () => {
  let c: ApiCluster;
  let a: ApiClient;
  let runId: string;
  let threadId: string;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock));
    a = new ApiClient(c.apis[0]!.url, KEYS.a);
    ({ runId, threadId } = await a.createRun('assistant'));
    await a.stream(`/v1/runs/${runId}/events?until=suspended`);
  });
  afterAll(async () => {
    await a.post(`/v1/runs/${runId}/cancel`);
    await c.stop();
  });

  const ROUTES: [string, string, unknown?][] = [
    ['GET', '/v1/runs/:id'],
    ['GET', '/v1/runs/:id/events'],
    ['GET', '/v1/runs/:id/events?until=suspended'],
    [
      'POST',
      '/v1/runs/:id/decisions',
      { decisions: [{ toolCallId: 'call_1_2', action: 'resume' }] },
    ],
    ['POST', '/v1/runs/:id/cancel'],
    ['POST', '/v1/runs/:id/fork', { atSeq: 1 }],
    ['POST', '/v1/runs/:id/replay'],
  ];
  const THREAD_ROUTES: [string, string][] = [
    ['GET', '/v1/threads/:id'],
    ['GET', '/v1/threads/:id/runs'],
    ['GET', '/v1/ai-sdk/chat/:id/stream'],
  ];

  it('on every run- and thread-scoped route: same status, headers and body', async () => {
    const base = c.apis[0]!.url;
    const missing = 'no-such-id-0000000000000000000000';
    for (const [method, path, body] of ROUTES) {
      const other = await answer(base, KEYS.b, method, path, runId, body);
      const none = await answer(base, KEYS.b, method, path, missing, body);
      expect({ route: `${method} ${path}`, ...other }).toEqual({
        route: `${method} ${path}`,
        ...none,
      });
      expect(other.status).toBe(404);
    }
    for (const [method, path] of THREAD_ROUTES) {
      const other = await answer(base, KEYS.b, method, path, threadId);
      const none = await answer(base, KEYS.b, method, path, missing);
      expect({ route: `${method} ${path}`, ...other }).toEqual({
        route: `${method} ${path}`,
        ...none,
      });
    }
    // and the owner still sees its run untouched
    expect((await a.get<RunSnapshot>(`/v1/runs/${runId}`)).body.status).toBe('waiting');
  });

  it("another tenant's checkpoint is never read: only its tenant field is", async () => {
    const b = new ApiClient(c.apis[0]!.url, KEYS.b);
    // Workers quiet (their reconciler reads checkpoints too): only the API talks to Redis now.
    await Promise.all(c.h.workers.map((w) => w.stop(500)));
    const commands = await monitorCommands(inject('redisUrl'), async () => {
      expect((await b.get(`/v1/runs/${runId}`)).status).toBe(404);
    });
    const onCheckpoint = commands.filter(
      (cmd) => cmd.includes(`{run:${runId}}:cp`) && !cmd.includes('[0 lua]'),
    );
    expect(onCheckpoint.length).toBeGreaterThan(0);
    for (const cmd of onCheckpoint) expect(cmd).toMatch(/"hget" "[^"]+:cp" "tenant"$/);
  });
});
