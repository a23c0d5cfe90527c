import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonApiError, BatonClient, BatonClientError, isApiError } from '@baton/client';
import { createDemoAgents, matrixAgentName, matrixAgents } from '@baton/core/testing';
import { bodyHash } from '@baton/api';
import { CreateRunRequestSchema, ErrorCodeSchema, type ErrorCode } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { freePort } from '@baton/testing/redis';
import { startRedisProcess } from '@baton/testing/redis-process';

/**
 * Codes the API cannot be made to answer from outside: an illegal state-machine transition and
 * an internal error are bugs, not requests. errors.test.ts (client) maps them like every code.
 */
const UNREACHABLE: readonly ErrorCode[] = ['illegal_transition', 'internal'];

describe('client: every error code the API answers becomes a typed BatonApiError', () => {
  let c: ApiCluster;
  let limited: ApiCluster;
  let a: BatonClient;
  const seen = new Map<ErrorCode, BatonApiError>();

  /** Awaits `call`, which must fail with `code` (and `status`); remembers it for the census. */
  async function expectCode(
    code: ErrorCode,
    status: number,
    call: Promise<unknown>,
  ): Promise<BatonApiError> {
    const error = await call.then(
      () => {
        throw new Error(`expected ${code}, the call succeeded`);
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BatonApiError);
    const api = error as BatonApiError;
    expect({ code: api.code, status: api.status }).toEqual({ code, status });
    expect(api.message.length).toBeGreaterThan(0);
    expect(isApiError(api, code)).toBe(true);
    seen.set(code, api);
    return api;
  }

  beforeAll(async () => {
    c = await startApiCluster(
      inject('redisUrl'),
      [...createDemoAgents(systemClock), ...matrixAgents()],
      {
        env: { BODY_LIMIT_BYTES: '4096', SCHEDULES_MAX_PER_TENANT: '1', THREAD_MAX_MESSAGES: '2' },
      },
    );
    limited = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: { RATE_LIMIT_PER_MINUTE: '2' },
    });
    a = new BatonClient({ baseUrl: c.apis[0]!.url, apiKey: KEYS.a });
  });
  afterAll(async () => {
    await c.stop();
    await limited.stop();
  });

  const deploy = {
    agent: 'assistant',
    input: { messages: [{ role: 'user' as const, content: 'deploy please' }] },
  };

  it('request errors: 400, 401, 403, 404, 413, 422, 429', async () => {
    await expectCode('bad_request', 400, a.runs.get('bad id'));
    const invalid = await expectCode(
      'validation_failed',
      400,
      a.runs.create({ agent: 'assistant', input: { messages: [{ role: 'user', content: '' }] } }),
    );
    expect(invalid.details).toMatchObject({ issues: [{ path: 'input.messages[0].content' }] });
    await expectCode(
      'unauthorized',
      401,
      new BatonClient({ baseUrl: a.baseUrl, apiKey: 'wrong-key-1234' }).agents.list(),
    );
    await expectCode('unauthorized', 401, new BatonClient({ baseUrl: a.baseUrl }).runs.list());
    await expectCode('forbidden', 403, a.runs.list({ tenant: 'tenant-b' }));
    await expectCode('not_found', 404, a.agents.get('nope'));
    await expectCode('not_found', 404, a.threads.get('never-used'));
    await expectCode('run_not_found', 404, a.runs.get('no-such-run'));
    await expectCode('run_not_found', 404, a.runs.cancel('no-such-run'));
    await expectCode(
      'payload_too_large',
      413,
      a.runs.create({
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'x'.repeat(5000) }] },
      }),
    );
    const tooLong = await expectCode(
      'thread_too_large',
      413,
      a.runs.create({
        agent: 'assistant',
        input: { messages: ['one', 'two', 'three'].map((content) => ({ role: 'user', content })) },
      }),
    );
    expect(tooLong.message).toContain('limit of 2 messages');
    await expectCode('unknown_agent', 422, a.runs.create({ ...deploy, agent: 'nobody' }));
    const l = new BatonClient({ baseUrl: limited.apis[0]!.url, apiKey: KEYS.a });
    await l.agents.list();
    await l.agents.list();
    const rate = await expectCode('rate_limited', 429, l.agents.list());
    expect(rate.retryAfterMs).toBeGreaterThanOrEqual(1_000);
  });

  it('run and decision errors: 409 and 422', async () => {
    const { runId } = await a.runs.create(deploy);
    for await (const e of a.runs.stream(runId, { until: 'suspended' })) void e;
    const snap = await a.runs.get(runId);
    const waiting = snap.await!.calls[0]!.toolCallId;
    const succeeded = snap.toolCalls.find((t) => t.status === 'succeeded')!.toolCallId;
    await expectCode('payload_invalid', 422, a.runs.approve(runId, waiting, { comment: 42 }));
    await expectCode('call_unknown', 409, a.runs.approve(runId, 'nope'));
    await expectCode('call_not_suspended', 409, a.runs.approve(runId, succeeded));
    await a.runs.approve(runId, waiting, { comment: 'ok' }, { decisionId: 'd-1' });
    await expectCode('decision_conflict', 409, a.runs.deny(runId, waiting, { decisionId: 'd-1' }));
    for await (const e of a.runs.stream(runId)) void e;
    await expectCode('run_done', 409, a.runs.approve(runId, waiting));
    // fork at an event the run does not have; replay of a run that ended well
    await expectCode('fork_point_invalid', 422, a.runs.fork(runId, { atSeq: 1_000_000 }));
    await expectCode('run_not_replayable', 409, a.runs.replay(runId));
    // a webhook aimed at this machine is refused (SSRF), and nothing is created
    await expectCode(
      'webhook_target_refused',
      400,
      a.runs.create({ ...deploy, webhook: { url: 'http://127.0.0.1:9/hook' } }),
    );
    // cancel stays idempotent: a finished run answers done, not an error
    expect(await a.runs.cancel(runId)).toEqual({ runId, status: 'done' });

    const busy = await a.runs.create({ ...deploy, threadId: 'client-busy' });
    const thread = await expectCode(
      'thread_busy',
      409,
      a.runs.create({ ...deploy, threadId: 'client-busy' }),
    );
    expect(thread.details).toMatchObject({ activeRunId: busy.runId });
    await a.runs.cancel(busy.runId);

    const key = `client-idem-${Date.now()}`;
    const first = await a.runs.create(deploy, { idempotencyKey: key });
    const replay = await a.runs.create(deploy, { idempotencyKey: key });
    expect(replay).toMatchObject({ runId: first.runId, replayed: true });
    expect(first.replayed).toBe(false);
    await expectCode(
      'idempotency_conflict',
      409,
      a.runs.create(
        { ...deploy, input: { messages: [{ role: 'user', content: 'other' }] } },
        { idempotencyKey: key },
      ),
    );
    await a.runs.cancel(first.runId);

    // 'conflict': a request that waited 10 s on the same Idempotency-Key while another API's
    // attempt held it (a failed attempt gives the key to the waiters instead: they run).
    const raceKey = `client-race-${Date.now()}`;
    const raced = { ...deploy, agent: 'nobody' };
    const { redis, keys } = c.h.client;
    await redis.set(
      keys.idempotency('tenant-a', 'create-run', raceKey),
      JSON.stringify({
        bodyHash: bodyHash(CreateRunRequestSchema.parse(raced)),
        state: 'pending',
        attempt: 'another-api',
      }),
      'EX',
      60,
    );
    await expectCode('conflict', 409, a.runs.create(raced, { idempotencyKey: raceKey }));
  }, 60_000);

  it('lifecycle errors: run_cancelled, run_active, thread_busy on delete, event_log_rewound, 415', async () => {
    // A run waiting for its approval whose workers are gone: its cancel is recorded but not yet
    // carried out, so what follows the acknowledged cancel is deterministic.
    const idle = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock));
    try {
      const b = new BatonClient({ baseUrl: idle.apis[0]!.url, apiKey: KEYS.a });
      const { runId, threadId } = await b.runs.create(deploy);
      for await (const e of b.runs.stream(runId, { until: 'suspended' })) void e;
      const call = (await b.runs.get(runId)).await!.calls[0]!.toolCallId;
      await Promise.all(idle.h.workers.map((w) => w.stop(500)));
      expect((await b.runs.cancel(runId)).status).toBe('waiting');
      await expectCode('run_cancelled', 409, b.runs.approve(runId, call));
      await expectCode('run_active', 409, b.runs.delete(runId));
      await expectCode('thread_busy', 409, b.threads.delete(threadId));
      await expectCode('run_not_found', 404, b.runs.delete('no-such-run'));
      // a Last-Event-ID past the log's end: the client is told, not left waiting
      const stream = b.runs.stream(runId, { after: 1_000_000 });
      await expectCode(
        'event_log_rewound',
        409,
        (async () => {
          for await (const e of stream) void e;
        })(),
      );
    } finally {
      await idle.stop();
    }
    const compressed = new BatonClient({
      baseUrl: a.baseUrl,
      apiKey: KEYS.a,
      headers: { 'content-encoding': 'compress' },
    });
    await expectCode('unsupported_media_type', 415, compressed.runs.create(deploy));
  });

  it('unavailable: 503 at once while Redis is away', async () => {
    const redis = await startRedisProcess({ aof: 'off' });
    const down = await startApiCluster(redis.url, createDemoAgents(systemClock));
    try {
      const b = new BatonClient({ baseUrl: down.apis[0]!.url, apiKey: KEYS.a });
      await b.agents.list();
      await redis.kill('SIGKILL');
      const error = await expectCode('unavailable', 503, b.agents.list());
      expect(error.retryAfterMs).toBe(1_000);
    } finally {
      await redis.start();
      await down.stop();
      await redis.stop();
    }
  });

  it('quota errors: 409 quota_exceeded past SCHEDULES_MAX_PER_TENANT', async () => {
    const schedule = { ...deploy, everyMs: 3_600_000 };
    const first = await a.schedules.create(schedule);
    const over = await expectCode('quota_exceeded', 409, a.schedules.create(schedule));
    expect(over.message).toContain('SCHEDULES_MAX_PER_TENANT');
    await a.schedules.delete(first.scheduleId);
  });

  it('census: every code but the unreachable ones was produced by the real API', () => {
    const missing = ErrorCodeSchema.options.filter(
      (code) => !seen.has(code) && !UNREACHABLE.includes(code),
    );
    expect(missing).toEqual([]);
  });

  it('client-side failures are BatonClientErrors with their own codes', async () => {
    const down = new BatonClient({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      apiKey: KEYS.a,
    });
    await expect(down.agents.list()).rejects.toMatchObject({
      name: 'BatonClientError',
      code: 'network',
    });
    const stream = down.runs.stream('r', { reconnect: { initialDelayMs: 1, maxAttempts: 2 } });
    const error = await (async () => {
      for await (const e of stream) void e;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BatonClientError);
    expect(error).toMatchObject({ code: 'reconnect_exhausted', cause: { code: 'network' } });
    const controller = new AbortController();
    controller.abort();
    await expect(a.agents.list({ signal: controller.signal })).rejects.toMatchObject({
      code: 'aborted',
    });
    // a stream of an unknown run is not retried: the 404 is the answer
    await expect(
      (async () => {
        for await (const e of a.runs.stream('no-such-run')) void e;
      })(),
    ).rejects.toMatchObject({ code: 'run_not_found', status: 404 });
  });
});

describe('client runs.stream against the real API', () => {
  let c: ApiCluster;
  let a: BatonClient;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), [
      ...createDemoAgents(systemClock),
      ...matrixAgents(),
    ]);
    a = new BatonClient({ baseUrl: c.apis[0]!.url, apiKey: KEYS.a });
  });
  afterAll(async () => {
    await c.stop();
  });

  it('until suspended ends at the wait; after resumes exactly after the given seq; a finished run yields nothing more', async () => {
    const agent = matrixAgentName(
      'parallel_batch_approval',
      'batch_all_suspended',
      'replay_tool_call',
    );
    const { runId } = await a.runs.create({
      agent,
      input: { messages: [{ role: 'user', content: 'go' }] },
    });
    const first = a.runs.stream(runId, { until: 'suspended' });
    const seqs: number[] = [];
    for await (const e of first) seqs.push(e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(first.lastSeq).toBe(seqs.length);
    const snap = await a.runs.get(runId);
    await a.runs.decide(
      runId,
      snap.await!.calls.map((call) => ({ toolCallId: call.toolCallId, action: 'resume' as const })),
    );
    const rest = a.runs.stream(runId, { after: first.lastSeq });
    const later: number[] = [];
    for await (const e of rest) later.push(e.seq);
    expect(later[0]).toBe(first.lastSeq + 1);
    expect(later).toEqual(later.map((_, i) => first.lastSeq + 1 + i));
    const none: number[] = [];
    for await (const e of a.runs.stream(runId, { after: rest.lastSeq })) none.push(e.seq);
    expect(none).toEqual([]);
    expect(() => {
      rest[Symbol.asyncIterator]();
    }).toThrow(/iterated once/);
  });
});
