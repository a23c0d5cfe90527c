/**
 * Scheduled runs end to end: a real worker PROCESS fires schedules through BullMQ job schedulers
 * on a private Redis, an in-process API serves /v1/schedules. Second-level cron and interval
 * schedules fire several times; pause stops firings and resume restarts them; delete; tenant
 * isolation; kill -9 of the worker between firings (firings continue, none creates two runs);
 * overlapping firings on a thread with reject and enqueue; a firing handled twice creates one run;
 * a record whose job scheduler was lost is repaired.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hashKey, loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { BatonRuntime } from '@baton/runtime';
import {
  SCHEDULE_QUEUE,
  ScheduleFirer,
  ScheduleService,
  schedulerIdOf,
} from '@baton/runtime/internal';
import type {
  ErrorBody,
  RunPage,
  RunSummary,
  RunView,
  ScheduleDetail,
  ScheduleFiring,
  SchedulePage,
  ThreadResponse,
} from '@baton/protocol';
import { BatonClient, isApiError } from '@baton/client';
import { ApiClient, type Reply } from '@baton/testing/api-harness';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import {
  spawnWorker,
  stopAllWorkerProcesses,
  type WorkerProcess,
} from '@baton/testing/worker-process';

const KEY_A = 'sched-tenant-a-key-123';
const KEY_B = 'sched-tenant-b-key-456';
const EVERY_SECOND = '*/1 * * * * *';

let redisUrl: string;
let prefix: string;
let api: RunningApi;
let a: ApiClient;
let b: ApiClient;
let worker: WorkerProcess;
let rt: BatonRuntime;
const measured: Record<string, number> = {};

function weather(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    agent: 'assistant',
    input: { messages: [{ role: 'user', content: 'weather in Paris?' }] },
    ...extra,
  };
}

interface Issue {
  readonly path: string;
  readonly message: string;
}

/** The error of a refused request (its issues when it is a validation error). */
function errorOf(r: Reply<unknown>): ErrorBody['error'] & { issues: Issue[] } {
  const { error } = r.body as ErrorBody;
  const details = error.details as { issues?: Issue[] } | undefined;
  return { ...error, issues: details?.issues ?? [] };
}

async function create(client: ApiClient, body: Record<string, unknown>): Promise<ScheduleDetail> {
  const r = await client.post<ScheduleDetail>('/v1/schedules', body);
  if (r.status !== 201) throw new Error(`create schedule: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function get(id: string): Promise<ScheduleDetail> {
  const r = await a.get<ScheduleDetail>(`/v1/schedules/${id}`);
  expect(r.status).toBe(200);
  return r.body;
}

/** Waits until the schedule has recorded at least `n` firings; returns its detail. */
async function firings(id: string, n: number, timeoutMs = 25_000): Promise<ScheduleDetail> {
  return waitFor(
    async () => {
      const s = await get(id);
      return s.firings >= n ? s : null;
    },
    timeoutMs,
    `schedule ${id} to fire ${n} times`,
  );
}

/** Every run the schedule created (its runs route, all pages). */
async function scheduleRuns(id: string): Promise<RunSummary[]> {
  const runs: RunSummary[] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor === null ? '' : `&cursor=${cursor}`;
    const r = await a.get<RunPage>(`/v1/schedules/${id}/runs?limit=100${q}`);
    expect(r.status).toBe(200);
    runs.push(...r.body.runs);
    cursor = r.body.nextCursor;
  } while (cursor !== null);
  return runs;
}

/** Runs of the tenant whose id says which schedule and instant created them. */
async function tenantRunsOf(id: string): Promise<string[]> {
  const ids = await rt.redis.zrange(rt.keys.tenantRuns('sched-a'), '0', '-1');
  return ids.filter((r) => r.startsWith(`${id}.`));
}

beforeAll(async () => {
  redisUrl = inject('redisUrl');
  prefix = testPrefix();
  worker = await spawnWorker({ redisUrl, prefix, agents: 'demo', probes: false });
  const config = loadApiConfig({
    REDIS_URL: redisUrl,
    BATON_PREFIX: prefix,
    API_KEYS: `sched-a:${KEY_A},sched-b:sha256:${hashKey(KEY_B)}`,
    LOG_LEVEL: 'silent',
  });
  api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  a = new ApiClient(api.url, KEY_A);
  b = new ApiClient(api.url, KEY_B);
  rt = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
});

afterAll(async () => {
  await api?.close();
  await rt?.close();
  await stopAllWorkerProcesses();
  if (Object.keys(measured).length > 0) console.log('schedules measured', measured);
});

describe('POST /v1/schedules validation', () => {
  it('refuses bad cron expressions, zones and intervals with 400 naming the field, and changes nothing', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ cron: '61 * * * *' }, 'cron', /61/],
      [{ cron: '* * * *' }, 'cron', /5 \(minute/],
      [{ cron: '0 0 30 2 *' }, 'cron', /day of month|never fires/i],
      [{ cron: '0 9 * * *', timezone: 'Mars/Olympus' }, 'timezone', /IANA/],
      [{ cron: '0 9 * * *', everyMs: 5000 }, 'everyMs', /not both/],
      [{}, 'cron', /either cron/],
      [{ everyMs: 500 }, 'everyMs', /1000/],
      [{ everyMs: 5000, timezone: 'UTC' }, 'timezone', /cron only/],
      [{ everyMs: 5000, endAt: '2001-01-01T00:00:00Z' }, 'endAt', /past/],
      [{ everyMs: 5000, startAt: 2_000_000_000_000, endAt: 1_900_000_000_000 }, 'endAt', /after/],
      [
        {
          everyMs: 5000,
          options: { metadata: { 'baton.scheduleId': 'x' } },
        },
        'options.metadata',
        /reserved/,
      ],
    ];
    for (const [extra, path, message] of cases) {
      const r = await a.post<unknown>('/v1/schedules', weather(extra));
      expect(r.status, JSON.stringify(extra)).toBe(400);
      const error = errorOf(r);
      expect(error.code).toBe('validation_failed');
      const issue = error.issues.find((i) => i.path.startsWith(path));
      expect(issue, `${JSON.stringify(extra)} → ${JSON.stringify(r.body)}`).toBeDefined();
      expect(issue?.message).toMatch(message);
    }
    const unknown = await a.post<unknown>('/v1/schedules', {
      ...weather({ everyMs: 5000 }),
      agent: 'nope',
    });
    expect(unknown.status).toBe(422);
    expect(errorOf(unknown).code).toBe('unknown_agent');
    const list = await a.get<SchedulePage>('/v1/schedules');
    expect(list.status).toBe(200);
    expect(list.body.schedules).toEqual([]);
    expect(await rt.queues.queue(SCHEDULE_QUEUE).getJobSchedulersCount()).toBe(0);
  });
});

describe('second-level schedules', () => {
  it('a */1-second cron fires several times, each firing one run linked to the schedule; pause stops it, resume restarts it, delete removes it', async () => {
    const created = await create(a, weather({ name: 'every second', cron: EVERY_SECOND }));
    const id: string = created.scheduleId;
    expect(created).toMatchObject({
      name: 'every second',
      state: 'active',
      cron: EVERY_SECOND,
      timezone: 'UTC',
      firings: 0,
      links: { self: `/v1/schedules/${id}` },
    });
    expect(created.nextFireAt).toBeGreaterThan(created.createdAt - 1);

    const started = Date.now();
    const s = await firings(id, 3);
    measured['cron: 3 firings after create (ms)'] = Date.now() - started;
    const recent = s.recentFirings;
    expect(recent.length).toBeGreaterThanOrEqual(3);
    const instants = recent.map((f) => f.scheduledFor);
    expect(new Set(instants).size).toBe(instants.length);
    for (const f of recent) {
      expect(f.scheduledFor % 1000).toBe(0); // on the second, as the cron says
      expect(f.outcome).toBe('created');
      const run = await a.get<RunView>(`/v1/runs/${String(f.runId)}`);
      expect(run.status).toBe(200);
      expect(run.body.scheduleId).toBe(id);
    }
    const lag = recent.map((f) => f.firedAt - f.scheduledFor);
    measured['cron: max firing lag (ms)'] = Math.max(...lag);

    // The runs finish: the schedule's runs are ordinary runs.
    const first = recent.at(-1) as ScheduleFiring;
    await waitFor(
      async () => (await a.get<RunView>(`/v1/runs/${String(first.runId)}`)).body.status === 'done',
      20_000,
      'the first scheduled run to finish',
    );

    const paused = await a.post<ScheduleDetail>(`/v1/schedules/${id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ state: 'paused', nextFireAt: null });
    expect(await rt.queues.queue(SCHEDULE_QUEUE).getJobScheduler(schedulerIdOf(id))).toBeFalsy();
    // a firing already being handled when the pause landed may still finish: let it settle
    await new Promise((r) => setTimeout(r, 1_500));
    const settled = (await get(id)).firings;
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await get(id)).firings).toBe(settled);
    expect((await a.post<ScheduleDetail>(`/v1/schedules/${id}/pause`)).body.state).toBe('paused'); // idempotent

    const resumed = await a.post<ScheduleDetail>(`/v1/schedules/${id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.state).toBe('active');
    expect(resumed.body.nextFireAt).toBeGreaterThan(0);
    await firings(id, settled + 2);

    const runs = await scheduleRuns(id);
    const detail = await get(id);
    expect(runs.length).toBe(detail.firings);
    expect(new Set(runs.map((r) => r.runId)).size).toBe(runs.length);
    expect((await tenantRunsOf(id)).length).toBe(detail.firings);

    expect((await a.request('DELETE', `/v1/schedules/${id}`)).status).toBe(204);
    expect((await a.get(`/v1/schedules/${id}`)).status).toBe(404);
    expect((await a.request('DELETE', `/v1/schedules/${id}`)).status).toBe(404);
    expect(await rt.queues.queue(SCHEDULE_QUEUE).getJobScheduler(schedulerIdOf(id))).toBeFalsy();
    // the runs it created stay
    expect((await a.get(`/v1/runs/${String(first.runId)}`)).status).toBe(200);
  });

  it('an interval schedule with a limit fires exactly that often, then completes', async () => {
    const created = await create(a, weather({ everyMs: 1000, limit: 3 }));
    const id: string = created.scheduleId;
    const done = await waitFor(
      async () => {
        const s = await get(id);
        return s.state === 'completed' ? s : null;
      },
      25_000,
      'the interval schedule to complete',
    );
    expect(done).toMatchObject({ firings: 3, completedReason: 'limit', nextFireAt: null });
    const at = done.recentFirings.map((f) => f.scheduledFor).sort((x, y) => x - y);
    expect(at[1]! - at[0]!).toBe(1000);
    expect(at[2]! - at[1]!).toBe(1000);
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await get(id)).firings).toBe(3);
    expect((await scheduleRuns(id)).length).toBe(3);
    const resume = await a.post<unknown>(`/v1/schedules/${id}/resume`);
    expect(resume.status).toBe(409);
    expect(errorOf(resume).code).toBe('conflict');
    expect(errorOf(resume).message).toMatch(/limit/);
  });
});

describe('tenants and idempotency', () => {
  it("another tenant's schedule is a 404 on every route, and never in its list", async () => {
    const created = await create(a, weather({ cron: '0 0 1 1 *', timezone: 'Europe/Paris' }));
    const id: string = created.scheduleId;
    expect(created.nextFireAt).toBeGreaterThan(Date.now());
    for (const [method, path] of [
      ['GET', `/v1/schedules/${id}`],
      ['GET', `/v1/schedules/${id}/runs`],
      ['POST', `/v1/schedules/${id}/pause`],
      ['POST', `/v1/schedules/${id}/resume`],
      ['DELETE', `/v1/schedules/${id}`],
    ] as const) {
      const r = await b.request<unknown>(method, path);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(errorOf(r).code).toBe('not_found');
    }
    expect((await b.get<SchedulePage>('/v1/schedules')).body.schedules).toEqual([]);
    expect((await get(id)).state).toBe('active');
    const listed = (await a.get<SchedulePage>('/v1/schedules')).body.schedules.map(
      (s) => s.scheduleId,
    );
    expect(listed).toContain(id);
    expect((await a.get('/v1/schedules?cursor=garbage')).status).toBe(400);
    await a.request('DELETE', `/v1/schedules/${id}`);
  });

  it('lists page by page, newest first', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1)
      ids.push((await create(b, weather({ cron: '0 0 1 1 *', name: `p${i}` }))).scheduleId);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor === null ? '' : `&cursor=${cursor}`;
      const r = await b.get<SchedulePage>(`/v1/schedules?limit=2${q}`);
      expect(r.status).toBe(200);
      expect(r.body.schedules.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.schedules.map((s) => s.scheduleId));
      cursor = r.body.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual([...ids].reverse());
    for (const id of ids)
      expect((await b.request('DELETE', `/v1/schedules/${id}`)).status).toBe(204);
  });

  it('Idempotency-Key: the same body gets the same schedule, another body 409', async () => {
    const body = weather({ cron: '0 0 1 1 *' });
    const headers = { 'idempotency-key': `sched-${prefix}` };
    const first = await a.post<ScheduleDetail>('/v1/schedules', body, headers);
    const again = await a.post<ScheduleDetail>('/v1/schedules', body, headers);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.scheduleId).toBe(first.body.scheduleId);
    const other = await a.post<unknown>('/v1/schedules', weather({ cron: '0 0 2 1 *' }), headers);
    expect(other.status).toBe(409);
    expect(errorOf(other).code).toBe('idempotency_conflict');
    await a.request('DELETE', `/v1/schedules/${first.body.scheduleId}`);
  });
});

describe('@baton/client', () => {
  it('creates, reads, pages, pauses, resumes and deletes schedules with typed answers and errors', async () => {
    const baton = new BatonClient({ baseUrl: api.url, apiKey: KEY_A });
    const other = new BatonClient({ baseUrl: api.url, apiKey: KEY_B });
    const request = {
      agent: 'assistant',
      input: { messages: [{ role: 'user' as const, content: 'weather?' }] },
      everyMs: 1000,
      limit: 2,
    };
    const created = await baton.schedules.create(request, { idempotencyKey: `client-${prefix}` });
    expect(created.replayed).toBe(false);
    const replay = await baton.schedules.create(request, { idempotencyKey: `client-${prefix}` });
    expect(replay).toMatchObject({ replayed: true, scheduleId: created.scheduleId });
    const done = await waitFor(
      async () => {
        const s = await baton.schedules.get(created.scheduleId);
        return s.state === 'completed' ? s : null;
      },
      20_000,
      'the client-made schedule to complete',
    );
    expect(done.firings).toBe(2);
    expect((await baton.schedules.runs(created.scheduleId)).runs).toHaveLength(2);
    expect(
      (await baton.schedules.list({ limit: 100 })).schedules.map((s) => s.scheduleId),
    ).toContain(created.scheduleId);
    expect((await baton.schedules.pause(created.scheduleId)).state).toBe('completed');
    await expect(baton.schedules.resume(created.scheduleId)).rejects.toSatisfy((e) =>
      isApiError(e, 'conflict'),
    );
    await expect(other.schedules.get(created.scheduleId)).rejects.toSatisfy((e) =>
      isApiError(e, 'not_found'),
    );
    await expect(
      baton.schedules.create({ ...request, everyMs: undefined, cron: '* * * *' }),
    ).rejects.toSatisfy(
      (e) => isApiError(e, 'validation_failed') && /cron/.test((e as Error).message),
    );
    await baton.schedules.delete(created.scheduleId);
    await expect(baton.schedules.get(created.scheduleId)).rejects.toSatisfy((e) =>
      isApiError(e, 'not_found'),
    );
  });
});

describe('failures', () => {
  it('kill -9 of the worker between firings: firings continue after a restart, and no firing creates two runs', async () => {
    const created = await create(a, weather({ cron: EVERY_SECOND }));
    const id: string = created.scheduleId;
    await firings(id, 2);
    worker.kill('SIGKILL');
    await worker.waitForExit();
    const killedAt = Date.now();
    const before = (await get(id)).firings;
    await new Promise((r) => setTimeout(r, 2_000));
    worker = await spawnWorker({ redisUrl, prefix, agents: 'demo', probes: false });
    const s = await firings(id, before + 3);
    const afterRestart = s.recentFirings.filter((f) => f.firedAt > killedAt);
    expect(afterRestart.length).toBeGreaterThanOrEqual(2);
    measured['restart: first firing after kill -9 (ms)'] =
      Math.min(...afterRestart.map((f) => f.firedAt)) - killedAt;
    await a.post(`/v1/schedules/${id}/pause`);
    await new Promise((r) => setTimeout(r, 1_500));
    const detail = await get(id);
    const runIds = await tenantRunsOf(id);
    const instants = runIds.map((r) => Number(r.slice(id.length + 1)));
    // one run per firing instant, and one recorded firing per run
    expect(new Set(instants).size).toBe(runIds.length);
    expect(runIds.length).toBe(detail.firings);
    expect((await scheduleRuns(id)).length).toBe(detail.firings);
    for (const runId of runIds)
      expect((await rt.store.load(runId))?.checkpoint.metadata['baton.scheduleId']).toBe(id);
    await a.request('DELETE', `/v1/schedules/${id}`);
  });

  it('a firing handled twice at once creates one run and is recorded once', async () => {
    const created = await create(a, weather({ cron: '0 0 1 1 *' }));
    const id: string = created.scheduleId;
    const service = new ScheduleService(rt);
    const firer = new ScheduleFirer(rt, service);
    const at = Math.floor(Date.now() / 1000) * 1000;
    const results = await Promise.all([
      firer.fire('sched-a', id, at),
      firer.fire('sched-a', id, at),
      firer.fire('sched-a', id, at),
    ]);
    expect(results.filter((r) => r.kind === 'fired')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'duplicate')).toHaveLength(2);
    expect(await tenantRunsOf(id)).toEqual([`${id}.${at}`]);
    const again = await firer.fire('sched-a', id, at);
    expect(again.kind).toBe('duplicate');
    const detail = await get(id);
    expect(detail.firings).toBe(1);
    expect(detail.recentFirings).toEqual([
      expect.objectContaining({ scheduledFor: at, outcome: 'created', runId: `${id}.${at}` }),
    ]);
    await a.request('DELETE', `/v1/schedules/${id}`);
  });

  it('a record whose job scheduler is missing (crash between the two writes) is repaired, and a scheduler without a record is removed', async () => {
    const created = await create(a, weather({ cron: EVERY_SECOND }));
    const id: string = created.scheduleId;
    const queue = rt.queues.queue(SCHEDULE_QUEUE);
    await queue.removeJobScheduler(schedulerIdOf(id));
    const lostAt = Date.now();
    // the worker's repair sweep (every RECONCILE_INTERVAL_MS) puts it back
    await waitFor(
      async () => (await queue.getJobScheduler(schedulerIdOf(id))) ?? null,
      15_000,
      'the job scheduler to be re-created',
    );
    measured['repair: lost job scheduler re-created after (ms)'] = Date.now() - lostAt;
    const before = (await get(id)).firings;
    await firings(id, before + 2);

    // the other way round: the record is gone, the queue still fires it
    await rt.redis.del(rt.keys.schedule('sched-a', id).record);
    await waitFor(
      async () => !(await queue.getJobScheduler(schedulerIdOf(id))),
      15_000,
      'the orphan job scheduler to be removed',
    );
    expect((await a.get(`/v1/schedules/${id}`)).status).toBe(404);
  });
});

describe('overlapping firings on a thread', () => {
  it("reject: while the thread's run waits for an approval, later firings are recorded as rejected", async () => {
    const thread = `sched-reject-${prefix}`;
    const created = await create(a, {
      agent: 'assistant',
      threadId: thread,
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
      options: { multitask: 'reject' },
      everyMs: 1000,
    });
    const id: string = created.scheduleId;
    const s = await firings(id, 3);
    await a.post(`/v1/schedules/${id}/pause`);
    const recent = [...s.recentFirings].reverse(); // oldest first
    const head = recent[0] as ScheduleFiring;
    expect(head).toMatchObject({ outcome: 'created' });
    const rejected = recent.slice(1);
    expect(rejected.length).toBeGreaterThanOrEqual(2);
    for (const f of rejected) {
      expect(f.outcome).toBe('rejected');
      expect(f.runId).toBeUndefined();
      expect(f.error?.code).toBe('thread_busy');
    }
    const t = await a.get<ThreadResponse>(`/v1/threads/${thread}`);
    expect(t.body.activeRunId).toBe(head.runId);
    expect(t.body.runIds).toEqual([head.runId]);
  });

  it('a firing on a thread over THREAD_MAX_MESSAGES is recorded as failed (thread_too_large), not retried', async () => {
    const thread = `sched-full-${prefix}`;
    // A thread at the default limit (5,000 messages), written as a run's release would.
    await rt.threads.acquire('sched-a', thread, 'seed', 'reject');
    const full = Array.from({ length: 5_000 }, (_, i) => ({
      id: `m${String(i)}`,
      role: 'user' as const,
      content: 'x',
    }));
    await rt.threads.release('sched-a', thread, 'seed', full, null);
    const created = await create(a, {
      agent: 'assistant',
      threadId: thread,
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
      everyMs: 60_000,
      limit: 1,
    });
    const s = await firings(created.scheduleId, 1);
    expect(s.recentFirings[0]).toMatchObject({
      outcome: 'failed',
      error: { code: 'thread_too_large' },
    });
    expect(s.recentFirings[0]?.runId).toBeUndefined();
  });

  it('enqueue: later firings queue behind the active run and run after it', async () => {
    const thread = `sched-enqueue-${prefix}`;
    const created = await create(a, {
      agent: 'assistant',
      threadId: thread,
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
      options: { multitask: 'enqueue' },
      everyMs: 1000,
      limit: 3,
    });
    const id: string = created.scheduleId;
    const s = await firings(id, 3);
    const [one, two, three] = [...s.recentFirings].reverse() as [
      ScheduleFiring,
      ScheduleFiring,
      ScheduleFiring,
    ];
    expect([one, two, three].map((f) => f.outcome)).toEqual(['created', 'queued', 'queued']);
    const t = await a.get<ThreadResponse>(`/v1/threads/${thread}`);
    expect(t.body.activeRunId).toBe(one.runId);
    expect(t.body.queued).toEqual([two.runId, three.runId]);
    // Approving the first run lets the next one start.
    const first = await waitFor(
      async () => {
        const r = await a.get<RunView>(`/v1/runs/${String(one.runId)}`);
        return r.body.status === 'waiting' ? r.body : null;
      },
      20_000,
      'the first run to wait for its approval',
    );
    const call = first.await?.calls[0];
    const decided = await a.post(`/v1/runs/${String(one.runId)}/decisions`, {
      decisions: [{ toolCallId: call?.toolCallId, action: 'resume', payload: {} }],
    });
    expect(decided.status).toBe(202);
    await waitFor(
      async () =>
        (await a.get<ThreadResponse>(`/v1/threads/${thread}`)).body.activeRunId === two.runId,
      20_000,
      'the second firing to become the active run',
    );
  });
});
