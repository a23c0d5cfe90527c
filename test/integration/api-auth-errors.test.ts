import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents, matrixAgentName, matrixAgents } from '@baton/core/testing';
import {
  CreateRunResponseSchema,
  DecisionsResponseSchema,
  ErrorBodySchema,
  RunPageSchema,
  RunSnapshotSchema,
  type RunSnapshot,
} from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import {
  ApiClient,
  KEYS,
  startApiCluster,
  type ApiCluster,
  type Reply,
} from '@baton/testing/api-harness';

/** A reply's body read as the protocol says it is (this file tests raw HTTP, so it reads replies). */
const snapshotOf = (r: Reply): RunSnapshot => RunSnapshotSchema.parse(r.body);
const errorOf = (r: Reply) => ErrorBodySchema.parse(r.body).error;
const runIdOf = (r: Reply): string => CreateRunResponseSchema.parse(r.body).runId;

const deployBody = {
  agent: 'assistant',
  input: { messages: [{ role: 'user', content: 'deploy please' }] },
};

describe('API auth matrix and error codes', () => {
  let c: ApiCluster;
  let a: ApiClient;
  let bTenant: ApiClient;
  let anon: ApiClient;
  let admin: ApiClient;
  let waitingRun: string;
  let waitingCall: string;
  beforeAll(async () => {
    c = await startApiCluster(
      inject('redisUrl'),
      [...createDemoAgents(systemClock), ...matrixAgents()],
      {
        env: {
          BODY_LIMIT_BYTES: '4096',
          MAX_INPUT_MESSAGES: '3',
          MAX_DECISIONS: '2',
          SSE_MAX_PER_TENANT: '2',
        },
      },
    );
    const url = c.apis[0]!.url;
    a = new ApiClient(url, KEYS.a);
    bTenant = new ApiClient(url, KEYS.b);
    anon = new ApiClient(url);
    admin = new ApiClient(url, KEYS.admin);
    waitingRun = (await a.createRun('assistant')).runId;
    await a.stream(`/v1/runs/${waitingRun}/events?until=suspended`);
    waitingCall = (await a.get<RunSnapshot>(`/v1/runs/${waitingRun}`)).body.await!.calls[0]!
      .toolCallId;
  });
  afterAll(async () => {
    await c.stop();
  });

  const expectError = (
    r: { status: number; body: unknown },
    status: number,
    code: string,
  ): void => {
    const body = r.body as { error?: { code?: unknown; message?: unknown } } | undefined;
    expect({ status: r.status, code: body?.error?.code }).toEqual({ status, code });
    expect(typeof body?.error?.message).toBe('string');
  };

  it('no key or a wrong key is 401 on every /v1 route; X-API-Key works like Bearer', async () => {
    for (const [method, path] of [
      ['GET', '/v1/runs'],
      ['POST', '/v1/runs'],
      ['GET', `/v1/runs/${waitingRun}`],
      ['GET', `/v1/runs/${waitingRun}/events`],
      ['POST', `/v1/runs/${waitingRun}/decisions`],
      ['POST', `/v1/runs/${waitingRun}/cancel`],
      ['GET', '/v1/threads/x'],
      ['GET', '/v1/agents'],
    ] as const) {
      expectError(await anon.request(method, path), 401, 'unauthorized');
      expectError(
        await anon.withKey('not-a-key-at-all').request(method, path),
        401,
        'unauthorized',
      );
    }
    const viaHeader = await anon.get('/v1/agents', { 'x-api-key': KEYS.a });
    expect(viaHeader.status).toBe(200);
  });

  it("another tenant's run is a 404 on every run-scoped route, SSE included", async () => {
    const created = await a.get(`/v1/runs/${waitingRun}`);
    expect(created.status).toBe(200);
    expectError(await bTenant.get(`/v1/runs/${waitingRun}`), 404, 'run_not_found');
    const sse = await bTenant.stream(`/v1/runs/${waitingRun}/events`);
    expect(sse.status).toBe(404);
    expect(sse.body).toMatchObject({ error: { code: 'run_not_found' } });
    expectError(
      await bTenant.post(`/v1/runs/${waitingRun}/decisions`, {
        decisions: [{ toolCallId: waitingCall, action: 'resume' }],
      }),
      404,
      'run_not_found',
    );
    expectError(await bTenant.post(`/v1/runs/${waitingRun}/cancel`), 404, 'run_not_found');
    const threadId = snapshotOf(created).threadId;
    expect((await a.get(`/v1/threads/${threadId}`)).status).toBe(200);
    expectError(await bTenant.get(`/v1/threads/${threadId}`), 404, 'not_found');
    expectError(await bTenant.get(`/v1/threads/${threadId}/runs`), 404, 'not_found');
    expect(RunPageSchema.parse((await bTenant.get('/v1/runs')).body).runs).toEqual([]);
    // the run is untouched
    expect(snapshotOf(await a.get(`/v1/runs/${waitingRun}`)).status).toBe('waiting');
    // an unknown run looks exactly the same as another tenant's
    expectError(await a.get('/v1/runs/no-such-run'), 404, 'run_not_found');
  });

  it('admin-only routes are 403 for tenants; Bull Board only with an admin key', async () => {
    expectError(await a.get('/v1/runs?tenant=tenant-b'), 403, 'forbidden');
    const cross = await admin.get('/v1/runs?tenant=tenant-a');
    expect(cross.status).toBe(200);
    expect(RunPageSchema.parse(cross.body).runs.map((r) => r.runId)).toContain(waitingRun);
    expectError(await a.get('/admin/queues'), 403, 'forbidden');
    expectError(await a.get('/admin/queues/api/queues'), 403, 'forbidden');
    const noKey = await anon.get('/admin/queues');
    expectError(noKey, 401, 'unauthorized');
    expect(noKey.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await admin.get('/admin/queues')).status).toBe(200);
  });

  it('malformed JSON, unknown fields, bad values and bad ids are 400s that say what to fix', async () => {
    const bad = await a.post('/v1/runs', '{"agent": "assistant",');
    expectError(bad, 400, 'bad_request');
    expect(errorOf(bad).message).toMatch(/not valid JSON/);
    const unknown = await a.post('/v1/runs', { ...deployBody, color: 'blue' });
    expectError(unknown, 400, 'validation_failed');
    expect(errorOf(unknown).message).toContain('"color"');
    const empty = await a.post('/v1/runs', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: '' }] },
    });
    expectError(empty, 400, 'validation_failed');
    expect((errorOf(empty).details as { issues: { path: string }[] }).issues[0]!.path).toBe(
      'input.messages[0].content',
    );
    const noType = await a.post('/v1/runs', 'agent=x', { 'content-type': 'text/plain' });
    expectError(noType, 400, 'bad_request');
    expect(errorOf(noType).message).toMatch(/Content-Type: application\/json/);
    expectError(await a.get('/v1/runs/bad%20id'), 400, 'bad_request');
    expectError(await a.get('/v1/runs?status=finished'), 400, 'validation_failed');
    expectError(await a.get('/v1/runs?bogus=1'), 400, 'validation_failed');
    expectError(await a.get('/v1/runs?cursor=garbage'), 400, 'bad_request');
    expectError(
      await a
        .stream(`/v1/runs/${waitingRun}/events`, { headers: { 'last-event-id': 'abc' } })
        .then((s) => ({ status: s.status, body: s.body })),
      400,
      'bad_request',
    );
    expectError(
      await a.post(`/v1/runs/${waitingRun}/cancel`, { reason: 'x' }),
      400,
      'validation_failed',
    );
    expectError(await a.get('/v1/nothing-here'), 404, 'not_found');
  });

  it('limits: body size and counts are 413, SSE connections per tenant 429 with Retry-After', async () => {
    const big = await a.post('/v1/runs', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'x'.repeat(5000) }] },
    });
    expectError(big, 413, 'payload_too_large');
    const many = await a.post('/v1/runs', {
      agent: 'assistant',
      input: { messages: Array.from({ length: 4 }, () => ({ role: 'user', content: 'hi' })) },
    });
    expectError(many, 413, 'payload_too_large');
    const decisions = Array.from({ length: 3 }, (_, i) => ({
      toolCallId: `c${i}`,
      action: 'resume',
    }));
    expectError(
      await a.post(`/v1/runs/${waitingRun}/decisions`, { decisions }),
      413,
      'payload_too_large',
    );

    // two open streams are the limit for tenant-a; the third gets 429
    const path = `/v1/runs/${waitingRun}/events`;
    const lastEventId = {
      'last-event-id': String(snapshotOf(await a.get(`/v1/runs/${waitingRun}`)).lastSeq),
    };
    const open = [
      a.stream(path, { headers: lastEventId, timeoutMs: 1_500 }),
      a.stream(path, { headers: lastEventId, timeoutMs: 1_500 }),
    ];
    await new Promise((r) => setTimeout(r, 300));
    const third = await a.stream(path, { headers: lastEventId, timeoutMs: 1_500 });
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ error: { code: 'rate_limited' } });
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    // another tenant is not affected
    const other = (await bTenant.createRun('assistant')).runId;
    const otherStream = await bTenant.stream(`/v1/runs/${other}/events?until=suspended`);
    expect(otherStream.status).toBe(200);
    await Promise.all(open);
    // slots are given back when streams close
    await new Promise((r) => setTimeout(r, 100));
    expect(await c.apis[0]!.api.context.sseLimiter.count('tenant-a')).toBe(0);
  });

  it('decision errors: payload 422, not suspended / conflict / unknown call 409, run done 409', async () => {
    const invalid = await a.post(`/v1/runs/${waitingRun}/decisions`, {
      decisions: [{ toolCallId: waitingCall, action: 'resume', payload: { comment: 42 } }],
    });
    expectError(invalid, 422, 'payload_invalid');
    expectError(
      await a.post(`/v1/runs/${waitingRun}/decisions`, {
        decisions: [{ toolCallId: 'nope', action: 'resume' }],
      }),
      409,
      'call_unknown',
    );

    const snap = (await a.get<RunSnapshot>(`/v1/runs/${waitingRun}`)).body;
    const succeeded = snap.toolCalls.find((t) => t.status === 'succeeded')!;
    const notSuspended = await a.post(`/v1/runs/${waitingRun}/decisions`, {
      decisions: [{ toolCallId: succeeded.toolCallId, action: 'resume' }],
    });
    expectError(notSuspended, 409, 'call_not_suspended');

    // the same decision twice is accepted once; a different decision for the call is a conflict
    const ok = await a.post(`/v1/runs/${waitingRun}/decisions`, {
      decisions: [{ decisionId: 'd-1', toolCallId: waitingCall, action: 'resume' }],
    });
    expect(ok.status).toBe(202);
    const again = await a.post(`/v1/runs/${waitingRun}/decisions`, {
      decisions: [{ decisionId: 'd-1', toolCallId: waitingCall, action: 'resume' }],
    });
    expect(again.status).toBe(202);
    expect(DecisionsResponseSchema.parse(again.body).duplicates).toEqual(['d-1']);
    const conflicting = await a.post(`/v1/runs/${waitingRun}/decisions`, {
      decisions: [{ decisionId: 'd-1', toolCallId: waitingCall, action: 'cancel' }],
    });
    expectError(conflicting, 409, 'decision_conflict');

    const rest = await a.stream(`/v1/runs/${waitingRun}/events`);
    expect(rest.endedByServer).toBe(true);
    expect(snapshotOf(await a.get(`/v1/runs/${waitingRun}`)).status).toBe('done');
    expectError(
      await a.post(`/v1/runs/${waitingRun}/decisions`, {
        decisions: [{ toolCallId: waitingCall, action: 'resume' }],
      }),
      409,
      'run_done',
    );
  });

  it('decision_conflict for a call that already has a different pending decision', async () => {
    const agent = matrixAgentName(
      'parallel_batch_approval',
      'batch_all_suspended',
      'replay_tool_call',
    );
    const { runId } = await a.createRun(agent, 'go');
    await a.stream(`/v1/runs/${runId}/events?until=suspended`);
    const first = await a.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ decisionId: 'x1', toolCallId: 'S1', action: 'resume' }],
    });
    expect(first.status).toBe(202);
    const second = await a.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ decisionId: 'x2', toolCallId: 'S1', action: 'cancel' }],
    });
    expectError(second, 409, 'decision_conflict');
    await a.post(`/v1/runs/${runId}/cancel`);
  });

  it('unknown agent 422, busy thread 409', async () => {
    expectError(await a.post('/v1/runs', { ...deployBody, agent: 'nobody' }), 422, 'unknown_agent');
    const first = await a.createRun('assistant', 'deploy please', { threadId: 'busy-thread' });
    const second = await a.post('/v1/runs', { ...deployBody, threadId: 'busy-thread' });
    expectError(second, 409, 'thread_busy');
    expect(errorOf(second).details).toMatchObject({ activeRunId: first.runId });
    const queued = await a.post('/v1/runs', {
      ...deployBody,
      threadId: 'busy-thread',
      options: { multitask: 'enqueue' },
    });
    expect(queued.status).toBe(202);
    expect(CreateRunResponseSchema.parse(queued.body).queuedBehind).toBe(first.runId);
    await a.post(`/v1/runs/${first.runId}/cancel`);
    await a.post(`/v1/runs/${runIdOf(queued)}/cancel`);
  });

  it('Idempotency-Key: same key + same body is the same run, a different body is 409', async () => {
    const key = { 'idempotency-key': `idem-${Date.now()}` };
    const r1 = await a.post(
      '/v1/runs',
      { ...deployBody, options: { metadata: { a: '1', b: '2' } } },
      key,
    );
    expect(r1.status).toBe(202);
    // same content, different key order: still the same request
    const r2 = await a.post(
      '/v1/runs',
      { options: { metadata: { b: '2', a: '1' } }, input: deployBody.input, agent: 'assistant' },
      key,
    );
    expect(r2.status).toBe(202);
    expect(runIdOf(r2)).toBe(runIdOf(r1));
    expect(r2.headers.get('idempotent-replayed')).toBe('true');
    const r3 = await a.post(
      '/v1/runs',
      { ...deployBody, input: { messages: [{ role: 'user', content: 'other' }] } },
      key,
    );
    expectError(r3, 409, 'idempotency_conflict');
    // keys are per tenant
    const other = await bTenant.post('/v1/runs', deployBody, key);
    expect(other.status).toBe(202);
    expect(runIdOf(other)).not.toBe(runIdOf(r1));
    // a failed first attempt does not burn the key
    const k2 = { 'idempotency-key': `idem-fail-${Date.now()}` };
    expectError(
      await a.post('/v1/runs', { ...deployBody, agent: 'nobody' }, k2),
      422,
      'unknown_agent',
    );
    expect((await a.post('/v1/runs', deployBody, k2)).status).toBe(202);
    for (const r of [r1, other])
      await (r === other ? bTenant : a).post(`/v1/runs/${runIdOf(r)}/cancel`);
  });
});

describe('API rate limit', () => {
  let c: ApiCluster;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: { RATE_LIMIT_PER_MINUTE: '3' },
    });
  });
  afterAll(async () => {
    await c.stop();
  });

  it('answers 429 with Retry-After once a tenant exceeds its requests per minute', async () => {
    const a = new ApiClient(c.apis[0]!.url, KEYS.a);
    for (let i = 0; i < 3; i += 1) expect((await a.get('/v1/agents')).status).toBe(200);
    const limited = await a.get('/v1/agents');
    expect(limited.status).toBe(429);
    expect(errorOf(limited).code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await a.withKey(KEYS.b).get('/v1/agents')).status).toBe(200);
  });
});
