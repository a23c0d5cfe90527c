/**
 * Webhooks end to end: a real worker PROCESS delivers to a real local HTTP receiver, through a
 * real API, on a private Redis. The receiver fails (500), then times out, then succeeds; every
 * attempt is signed (Standard Webhooks, checked with the standardwebhooks library) under one
 * stable webhook id, and the delivery log says so through the API. Internal targets are refused
 * at registration and again at delivery, and a worker killed -9 between committing run.finished
 * and enqueueing its webhook loses nothing. One tenant's endpoint that never answers holds only
 * its own delivery slots.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import {
  CreateRunResponseSchema,
  ErrorBodySchema,
  RunPageSchema,
  RunViewSchema,
  RunWebhooksResponseSchema,
  WebhookMessageSchema,
  type CreateRunResponse,
  type RunWebhooksResponse,
  type WebhookDelivery,
  type WebhookMessage,
} from '@baton/protocol';
import { BatonKeys, webhookIdFor } from '@baton/runtime/internal';
import { ApiClient } from '@baton/testing/api-harness';
import { testRedis } from '@baton/testing/redis-client';
import { silentLogger, testPrefix } from '@baton/testing/worker-harness';
import {
  spawnWorker,
  stopAllWorkerProcesses,
  type WorkerProcess,
} from '@baton/testing/worker-process';
import {
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from '@baton/testing/webhook-receiver';

const KEY_A = 'acme-webhook-key-123';
const KEY_B = 'beta-webhook-key-456';
const TENANT_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
/** Test-sized delivery settings: an attempt times out after 1.5 s, retries come within ~1 s. */
const FAST = {
  WEBHOOK_TIMEOUT_MS: '1500',
  WEBHOOK_BACKOFF_MS: '200',
  WEBHOOK_BACKOFF_MAX_MS: '1000',
  WEBHOOK_ATTEMPTS: '4',
  WEBHOOK_SWEEP_INTERVAL_MS: '500',
};
const measured: Record<string, number> = {};

interface Stack {
  readonly prefix: string;
  readonly api: RunningApi;
  readonly a: ApiClient;
  readonly b: ApiClient;
  readonly redisUrl: string;
}

const apis: RunningApi[] = [];

async function startStack(apiEnv: Record<string, string>, prefix = testPrefix()): Promise<Stack> {
  const redisUrl = inject('redisUrl');
  const config = loadApiConfig({
    REDIS_URL: redisUrl,
    BATON_PREFIX: prefix,
    API_KEYS: `acme:${KEY_A},beta:${KEY_B}`,
    LOG_LEVEL: 'silent',
    ...FAST,
    ...apiEnv,
  });
  const api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  apis.push(api);
  return {
    prefix,
    api,
    a: new ApiClient(api.url, KEY_A),
    b: new ApiClient(api.url, KEY_B),
    redisUrl,
  };
}

function worker(
  s: Stack,
  env: Record<string, string>,
  pause?: Record<string, number>,
): Promise<WorkerProcess> {
  return spawnWorker({
    redisUrl: s.redisUrl,
    prefix: s.prefix,
    agents: 'demo',
    env: { ...FAST, ...env },
    ...(pause ? { pause } : {}),
  });
}

async function poll<T>(fn: () => Promise<T | null | undefined | false>, what: string, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function messageOf(r: ReceivedWebhook): WebhookMessage {
  return WebhookMessageSchema.parse(JSON.parse(r.body));
}

function errorOf(body: unknown): { code: string; message: string; details?: unknown } {
  return ErrorBodySchema.parse(body).error;
}

async function createRun(
  client: ApiClient,
  content: string,
  webhook?: Record<string, unknown>,
): Promise<CreateRunResponse> {
  const r = await client.post('/v1/runs', {
    agent: 'assistant',
    input: { messages: [{ role: 'user', content }] },
    options: { metadata: { order: '42' } },
    ...(webhook ? { webhook } : {}),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return CreateRunResponseSchema.parse(r.body);
}

async function approveAll(client: ApiClient, runId: string): Promise<void> {
  const view = await poll(async () => {
    const r = RunViewSchema.parse((await client.get(`/v1/runs/${runId}`)).body);
    return r.status === 'waiting' ? r : null;
  }, `run ${runId} to wait`);
  const decisions = (view.await?.calls ?? []).map((c) => ({
    toolCallId: c.toolCallId,
    action: 'resume',
  }));
  const r = await client.post(`/v1/runs/${runId}/decisions`, { decisions });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
}

async function deliveriesWhen(
  client: ApiClient,
  runId: string,
  done: (deliveries: WebhookDelivery[]) => boolean,
): Promise<RunWebhooksResponse> {
  return poll(async () => {
    const r = await client.get(`/v1/runs/${runId}/webhooks`);
    expect(r.status).toBe(200);
    const body = RunWebhooksResponseSchema.parse(r.body);
    return done(body.deliveries) ? body : null;
  }, `the delivery log of ${runId}`);
}

afterAll(async () => {
  await stopAllWorkerProcesses();
  await Promise.all(apis.map((a) => a.close()));
  console.log(`[webhooks] measured ${JSON.stringify(measured)}`);
});

describe('webhooks against a real receiver', () => {
  let rx: WebhookReceiver;
  let s: Stack;

  beforeAll(async () => {
    // /flaky: first 500, then no answer (the attempt times out), then 204; /gone: 410.
    rx = await startWebhookReceiver((path, nth) => {
      if (path === '/flaky') return nth === 1 ? 500 : nth === 2 ? 'hang' : 204;
      if (path === '/gone') return 410;
      return 204;
    });
    // The API allows private targets (the receiver is on loopback); the worker only the
    // 127.0.0.1 literal, so a URL naming "localhost" is refused when it is delivered.
    s = await startStack({
      BATON_WEBHOOK_ALLOW_PRIVATE: '1',
      TENANT_WEBHOOKS: `beta:${TENANT_SECRET}:${rx.url('/gone')}`,
    });
    await worker(s, { BATON_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
  });

  afterAll(async () => {
    await rx?.close();
  });

  it('retries a 500 and a timeout, then delivers; same id and signed every time; the log shows each attempt', async () => {
    const url = rx.url('/flaky');
    const started = Date.now();
    const created = await createRun(s.a, 'deploy please', { url });
    const runId = created.runId;
    const secret = created.webhook?.secret ?? '';
    expect(created.webhook).toEqual({
      url,
      events: ['run.finished', 'run.waiting', 'run.child_finished', 'tool_call.deadline'],
      secret: expect.stringMatching(/^whsec_/) as unknown,
    });

    await poll(async () => rx.on('/flaky').length >= 3, 'three attempts of run.waiting');
    measured['waitingDeliveredAfter3AttemptsMs'] = Date.now() - started;
    await approveAll(s.a, runId);
    await poll(async () => rx.on('/flaky').length >= 6, 'three attempts of run.finished');

    const byId = new Map<string, ReceivedWebhook[]>();
    for (const r of rx.on('/flaky'))
      byId.set(r.headers['webhook-id']!, [...(byId.get(r.headers['webhook-id']!) ?? []), r]);
    expect(byId.size).toBe(2);
    const types: string[] = [];
    for (const [id, attempts] of byId) {
      expect(attempts.map((r) => r.nth)).toEqual([1, 2, 3]);
      const message = messageOf(attempts[0]!);
      types.push(message.type);
      // The id is derived from the run and the event: receivers can deduplicate on it.
      expect(id).toBe(webhookIdFor(runId, message.data.seq, message.type));
      expect(message.data).toMatchObject({ runId, tenantId: 'acme', metadata: { order: '42' } });
      for (const r of attempts) {
        expect(r.body).toBe(attempts[0]!.body);
        expect(new Webhook(secret).verify(r.body, r.headers)).toEqual(message);
        expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      }
    }
    expect(types).toEqual(['run.waiting', 'run.finished']);
    const [waiting, finished] = [...byId.values()].map((a) => messageOf(a[0]!));
    if (waiting?.type !== 'run.waiting') throw new Error('expected run.waiting first');
    expect(waiting.data.await.calls.map((c) => c.toolName)).toEqual(['deploy_service']);
    expect(finished?.data).toMatchObject({ status: 'done', termination: { kind: 'natural_end' } });

    const log = await deliveriesWhen(
      s.a,
      runId,
      (d) => d.length === 2 && d.every((x) => x.status === 'delivered'),
    );
    expect(log.endpoints).toEqual([
      {
        endpoint: 'run',
        url,
        events: ['run.finished', 'run.waiting', 'run.child_finished', 'tool_call.deadline'],
      },
    ]);
    for (const delivery of log.deliveries) {
      expect(delivery.endpoint).toBe('run');
      expect(delivery.attempts).toHaveLength(3);
      const [first, second, third] = delivery.attempts as [
        (typeof delivery.attempts)[0],
        (typeof delivery.attempts)[0],
        (typeof delivery.attempts)[0],
      ];
      expect(first).toMatchObject({ attempt: 1, statusCode: 500 });
      expect(first.nextRetryAt).toBeGreaterThan(first.at);
      expect(second).toMatchObject({
        attempt: 2,
        error: expect.stringMatching(/timeout/) as unknown,
      });
      expect(second.statusCode).toBeUndefined();
      expect(second.durationMs).toBeGreaterThanOrEqual(1_400);
      expect(second.nextRetryAt).toBeGreaterThan(second.at);
      expect(third).toMatchObject({ attempt: 3, statusCode: 204 });
      expect(third.nextRetryAt).toBeUndefined();
    }
    expect(log.deliveries.map((d) => d.type)).toEqual(['run.waiting', 'run.finished']);
    expect(JSON.stringify(log)).not.toContain(secret.slice(6));

    // Another tenant's run does not exist, here as everywhere.
    const other = await s.b.get(`/v1/runs/${runId}/webhooks`);
    expect(other.status).toBe(404);
    expect(errorOf(other.body).code).toBe('run_not_found');
  });

  it("the tenant's webhook fires beside the run's own (filtered) one; 410 stops it after one attempt", async () => {
    const own = rx.url('/own');
    const created = await createRun(s.b, 'deploy please', {
      url: own,
      events: ['run.finished'],
      secret: `whsec_${Buffer.alloc(24, 3).toString('base64')}`,
    });
    const runId = created.runId;
    // A secret the caller chose is not echoed back.
    expect(created.webhook).toEqual({ url: own, events: ['run.finished'] });
    await poll(async () => rx.on('/gone').some((r) => messageOf(r).data.runId === runId), 'tenant');
    await approveAll(s.b, runId);
    const log = await deliveriesWhen(
      s.b,
      runId,
      (d) => d.length === 3 && d.every((x) => x.status !== 'pending' && x.status !== 'retrying'),
    );
    const summary = log.deliveries.map((d) => [d.endpoint, d.type, d.status, d.attempts.length]);
    expect(summary).toEqual([
      ['tenant', 'run.waiting', 'stopped', 1],
      ['run', 'run.finished', 'delivered', 1],
      ['tenant', 'run.finished', 'stopped', 1],
    ]);
    const tenantHits = rx.on('/gone').filter((r) => messageOf(r).data.runId === runId);
    expect(tenantHits.map((r) => messageOf(r).type)).toEqual(['run.waiting', 'run.finished']);
    for (const r of tenantHits)
      expect(new Webhook(TENANT_SECRET).verify(r.body, r.headers)).toEqual(messageOf(r));
    const ownHits = rx.on('/own').filter((r) => messageOf(r).data.runId === runId);
    expect(ownHits).toHaveLength(1);
    const done = messageOf(ownHits[0]!);
    if (done.type === 'run.finished')
      measured['finishedToReceivedMs'] = ownHits[0]!.at - done.data.finishedAt;
    // One message, one id, whichever endpoint receives it.
    expect(ownHits[0]!.headers['webhook-id']).toBe(tenantHits[1]!.headers['webhook-id']);
    expect(log.endpoints.map((e) => e.endpoint)).toEqual(['run', 'tenant']);
  });

  it('a run the API itself ends (cancelled while queued behind its thread) reports too', async () => {
    const first = await createRun(s.a, 'deploy please');
    const r = await s.a.post('/v1/runs', {
      agent: 'assistant',
      threadId: first.threadId,
      input: { messages: [{ role: 'user', content: 'weather in Paris' }] },
      options: { multitask: 'enqueue' },
      webhook: { url: rx.url('/queued') },
    });
    expect(r.status).toBe(202);
    const queued = CreateRunResponseSchema.parse(r.body);
    expect(queued.queuedBehind).toBe(first.runId);
    expect((await s.a.post(`/v1/runs/${queued.runId}/cancel`)).status).toBe(202);
    const hit = await poll(async () => rx.on('/queued')[0], 'the cancelled run’s webhook');
    expect(messageOf(hit)).toMatchObject({
      type: 'run.finished',
      data: { runId: queued.runId, termination: { kind: 'cancelled' } },
    });
    expect((await s.a.post(`/v1/runs/${first.runId}/cancel`)).status).toBe(202);
  });

  it('refuses internal targets at registration (400, nothing created) unless the operator allows them', async () => {
    const strict = await startStack({}, s.prefix);
    const count = async (): Promise<number> =>
      RunPageSchema.parse((await strict.a.get('/v1/runs')).body).runs.length;
    const before = await count();
    for (const [url, reason] of [
      [rx.url('/flaky'), 'loopback'],
      ['http://localhost:9/hook', 'loopback'],
      ['http://169.254.169.254/latest/meta-data/', 'link_local'],
      ['http://[::1]:8080/', 'loopback'],
      ['http://10.1.2.3/hook', 'private'],
      ['http://100.64.0.7/hook', 'cgnat'],
      ['https://user:pw@example.com/hook', 'credentials'],
    ] as const) {
      const r = await strict.a.post('/v1/runs', {
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'hi' }] },
        webhook: { url },
      });
      expect(r.status, url).toBe(400);
      const error = errorOf(r.body);
      expect(error.code, url).toBe('webhook_target_refused');
      expect(error.details, url).toMatchObject({ reason });
      expect(error.message).toMatch(/webhook\.url/);
    }
    const scheme = await strict.a.post('/v1/runs', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'hi' }] },
      webhook: { url: 'ftp://example.com/hook' },
    });
    expect(scheme.status).toBe(400);
    expect(errorOf(scheme.body).code).toBe('validation_failed');
    expect(await count()).toBe(before);
  });

  it('checks the target again at delivery: a host that resolves to loopback is not called', async () => {
    const url = rx.url('/never').replace('127.0.0.1', 'localhost');
    const { runId } = await createRun(s.a, 'weather in Paris', { url });
    const log = await deliveriesWhen(
      s.a,
      runId,
      (d) => d.length === 1 && d[0]?.status !== 'pending',
    );
    const [delivery] = log.deliveries;
    expect(delivery).toMatchObject({ type: 'run.finished', status: 'refused' });
    expect(delivery?.attempts).toHaveLength(1);
    expect(delivery?.attempts[0]?.error).toMatch(/localhost resolves to .*loopback/);
    expect(rx.on('/never')).toEqual([]);

    // The webhook keys live as long as the finished run, and go with it when it is deleted.
    const redis = testRedis(s.redisUrl);
    try {
      const keys = new BatonKeys(s.prefix);
      const hook = keys.webhook(runId);
      const runTtl = await redis.pttl(keys.run(runId).cp);
      expect(runTtl).toBeGreaterThan(0);
      for (const key of [hook.config, hook.log]) {
        const ttl = await redis.pttl(key);
        expect(ttl, key).toBeGreaterThan(0);
        expect(Math.abs(ttl - runTtl), key).toBeLessThan(30_000);
      }
      expect(await redis.zscore(keys.webhookRuns, runId)).toBeNull();
      expect((await s.a.request('DELETE', `/v1/runs/${runId}`)).status).toBe(204);
      expect(await redis.exists(hook.config, hook.log)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

describe('webhooks under kill -9', () => {
  it('a worker killed after committing run.finished and before enqueueing its webhook loses nothing', async () => {
    const rx = await startWebhookReceiver(() => 204);
    try {
      const s = await startStack({ BATON_WEBHOOK_ALLOW_PRIVATE: '1' });
      const env = { BATON_WEBHOOK_ALLOW_PRIVATE: '1' };
      // The first worker only runs the agent: with no delivery and no sweeper of its own
      // (WEBHOOK_CONCURRENCY 0), nothing but its commit hook, held at the probe, may enqueue
      // the webhook, so the crash window stays open however slow the machine (its sweeper
      // could enqueue it first once WEBHOOK_SWEEP_INTERVAL_MS passed). The second worker's
      // sweep is what must find it.
      const first = await worker(
        s,
        { ...env, WEBHOOK_CONCURRENCY: '0' },
        { 'before-webhook-outbox': 60_000 },
      );
      const { runId, webhook } = await createRun(s.a, 'weather in Paris', {
        url: rx.url('/crash'),
      });
      await first.onProbe('before-webhook-outbox', (p) => p['runId'] === runId);
      // Committed, and nothing enqueued yet: the crash window.
      expect(RunViewSchema.parse((await s.a.get(`/v1/runs/${runId}`)).body).status).toBe('done');
      const before: unknown = (await s.a.get(`/v1/runs/${runId}/webhooks`)).body;
      expect(RunWebhooksResponseSchema.parse(before).deliveries).toEqual([]);
      first.kill('SIGKILL');
      await first.waitForExit();
      const killedAt = Date.now();
      await worker(s, env);
      const hit = await poll(async () => rx.on('/crash')[0], 'the webhook after the crash');
      measured['deliveredAfterKillMs'] = hit.at - killedAt;
      const message = messageOf(hit);
      expect(message).toMatchObject({ type: 'run.finished', data: { runId, status: 'done' } });
      expect(hit.headers['webhook-id']).toBe(webhookIdFor(runId, message.data.seq, 'run.finished'));
      expect(new Webhook(webhook?.secret ?? '').verify(hit.body, hit.headers)).toEqual(message);
      const log = await deliveriesWhen(s.a, runId, (d) => d[0]?.status === 'delivered');
      expect(log.deliveries).toHaveLength(1);
      // Later sweeps find the run's events examined and enqueue nothing more.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(rx.on('/crash')).toHaveLength(1);
    } finally {
      await rx.close();
    }
    // Two worker processes start here one after the other (about 6 s each on a loaded 2-core
    // machine), as in this file's other process test.
  }, 120_000);
});

describe("webhooks: one tenant's endpoint that never answers", () => {
  it("another tenant's delivery to a healthy endpoint arrives while the flood's deliveries are all still pending", async () => {
    // Accepts every connection and never answers: each attempt holds its slot for the timeout.
    const sockets = new Set<Socket>();
    const blackhole = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    });
    let accepted = 0;
    blackhole.on('connection', () => (accepted += 1));
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    const port = (blackhole.address() as AddressInfo).port;
    const rx = await startWebhookReceiver(() => 204);
    try {
      const s = await startStack({ BATON_WEBHOOK_ALLOW_PRIVATE: '1' });
      // Longer than the test: no attempt of the flood may end (time out) before it is over.
      await worker(s, { BATON_WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_TIMEOUT_MS: '120000' });
      const events = ['run.finished'];
      const flood: string[] = [];
      for (let i = 0; i < 40; i += 10)
        flood.push(
          ...(
            await Promise.all(
              Array.from({ length: 10 }, (_, j) =>
                createRun(s.a, `weather in Oslo ${String(i + j)}`, {
                  url: `http://127.0.0.1:${String(port)}/hook/${String(i + j)}`,
                  events,
                }),
              ),
            )
          ).map((c) => c.runId),
        );
      // Every delivery of the flood is enqueued (ahead of B's, in the one FIFO queue).
      for (const runId of flood) await deliveriesWhen(s.a, runId, (d) => d.length === 1);
      await poll(async () => accepted >= 2, 'the flood to reach the blackhole');
      const asked = Date.now();
      const other = await createRun(s.b, 'weather in Paris', { url: rx.url('/b'), events });
      const hit = await poll(async () => rx.on('/b')[0], "tenant B's delivery", 60_000);
      measured['otherTenantBehindBlackholeMs'] = hit.at - asked;
      expect(messageOf(hit)).toMatchObject({
        type: 'run.finished',
        data: { runId: other.runId, tenantId: 'beta' },
      });
      // Meanwhile no attempt of the flood ended: all 40 are pending, and only the target's own
      // slots (WEBHOOK_TARGET_CONCURRENCY) ever held a connection to it.
      for (const runId of flood) {
        const log = RunWebhooksResponseSchema.parse(
          (await s.a.get(`/v1/runs/${runId}/webhooks`)).body,
        );
        expect(log.deliveries[0]?.status).toBe('pending');
        expect(log.deliveries[0]?.attempts).toEqual([]);
      }
      expect(accepted).toBe(2);
    } finally {
      for (const socket of sockets) socket.destroy();
      blackhole.close();
      await rx.close();
      await stopAllWorkerProcesses();
    }
  }, 120_000);
});
