/**
 * Run lists answer the same with the archive on: every filter and query parameter of
 * GET /v1/runs and GET /v1/threads/:id/runs, asked of an API that reads Redis only while Redis
 * holds every run, and of an API with ARCHIVE_URL once half of the finished runs live only in
 * PostgreSQL. A filter one path drops (fairnessKey once was, on the archive's) shows a tenant's
 * other users' runs; a value one path refuses and the other takes (a forged cursor, a NUL) is a
 * 500 on one of them.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ListRunsQuerySchema,
  ThreadRunsQuerySchema,
  hashKey,
  loadApiConfig,
  startApi,
  type RunningApi,
} from '@baton/api';
import type { ArchivedRun } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import type { Checkpoint, RunIdentity, RunStatus } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { AgentRegistry, BatonKeys, PgArchive, RedisRunStore } from '@baton/runtime/internal';
import { ApiClient, KEYS } from '@baton/testing/api-harness';
import { createTestDatabase, type TestDatabase } from '@baton/testing/postgres';
import { uniquePrefix } from '@baton/testing/redis';
import { createdRun } from '@baton/testing/redis-runs';
import { silentLogger } from '@baton/testing/worker-harness';

interface Seeded {
  readonly checkpoint: Checkpoint;
  readonly archived: boolean;
}

const STATUSES: RunStatus[] = ['created', 'running', 'waiting', 'done'];
const AGENTS = ['alpha', 'beta'];
const THREADS = ['th-1', 'th-2', 'th-3'];
/** undefined: the run names none (its tenant's); 'tenant-a': named, and the tenant's too. */
const FAIRNESS_KEYS = [undefined, 'user-1', 'user-2', 'tenant-a', 'user-1'];

let db: TestDatabase;
let redis: Redis;
let archive: PgArchive;
let hotApi: RunningApi;
let archivedApi: RunningApi;
let prefix: string;
/** A schedule of tenant-a whose run index names every run of tenant-a (GET /v1/schedules/:id/runs). */
let scheduleId: string;
const seeded: Seeded[] = [];

function apiConfig(prefix: string, env: Record<string, string>) {
  return loadApiConfig({
    REDIS_URL: inject('redisUrl'),
    BATON_PREFIX: prefix,
    API_KEYS: `tenant-a:${KEYS.a},tenant-b:sha256:${hashKey(KEYS.b)}`,
    ADMIN_KEYS: `ops:${KEYS.admin}`,
    LOG_LEVEL: 'silent',
    ...env,
  });
}

/** A run of the data set: `i` picks its tenant, agent, thread, fairness key, status and time. */
function runOf(i: number): Checkpoint {
  const tenantId = i % 7 === 6 ? 'tenant-b' : 'tenant-a';
  const fairnessKey = FAIRNESS_KEYS[i % FAIRNESS_KEYS.length];
  const identity: Partial<RunIdentity> = {
    runId: `run-${String(i).padStart(3, '0')}`,
    tenantId,
    agent: AGENTS[i % AGENTS.length]!,
    threadId: THREADS[i % THREADS.length]!,
    ...(fairnessKey === undefined ? {} : { fairnessKey }),
    // Some runs of each agent version, some from before versions (none).
    ...(i % 3 === 2 ? {} : { agentVersion: i % 3 === 0 ? 'v1' : 'v2' }),
  };
  // Three runs share each creation time: pages must break ties by run id on both paths.
  const createdAt = 10_000 + Math.floor(i / 3);
  const { checkpoint } = createdRun(identity, createdAt);
  // Most runs finished (only those reach the archive); the rest in each live status.
  const status = i % 5 === 4 ? STATUSES[i % 3]! : 'done';
  return status === 'done'
    ? {
        ...checkpoint,
        status,
        termination: { kind: 'natural_end' },
        updatedAt: createdAt + 1,
        finishedAt: createdAt + 1,
      }
    : { ...checkpoint, status, updatedAt: createdAt + 1 };
}

beforeAll(async () => {
  prefix = uniquePrefix('parity');
  db = await createTestDatabase('archive_list_parity');
  redis = new Redis(inject('redisUrl'));
  archive = new PgArchive({ url: db.url, logger: silentLogger });
  const store = new RedisRunStore({ redis, prefix, now: () => 20_000 });
  for (let i = 0; i < 60; i += 1) {
    const checkpoint = runOf(i);
    await store.create(checkpoint, []);
    seeded.push({ checkpoint, archived: checkpoint.status === 'done' && i % 2 === 0 });
  }
  hotApi = await startApi({
    config: apiConfig(prefix, {}),
    port: 0,
    host: '127.0.0.1',
    logger: silentLogger,
  });
  // The schedule's agent, as a worker would advertise it (no worker runs here: nothing fires).
  await new AgentRegistry(createDemoAgents(systemClock)).advertise(
    redis,
    new BatonKeys(prefix),
    'parity-worker',
    Date.now(),
  );
  const schedule = await new ApiClient(hotApi.url, KEYS.a).post<{ scheduleId: string }>(
    '/v1/schedules',
    {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'never fires here' }] },
      cron: '0 0 1 1 *',
    },
  );
  if (schedule.status !== 201) throw new Error(`schedule: ${JSON.stringify(schedule.body)}`);
  scheduleId = schedule.body.scheduleId;
  const index = new BatonKeys(prefix).schedule('tenant-a', scheduleId).runs;
  // Scored by when each firing was due: one run per firing, so no two alike.
  for (const [i, { checkpoint }] of seeded.entries())
    if (checkpoint.identity.tenantId === 'tenant-a')
      await redis.zadd(index, 50_000 + i, checkpoint.identity.runId);
  archivedApi = await startApi({
    config: apiConfig(prefix, { ARCHIVE_URL: db.url }),
    port: 0,
    host: '127.0.0.1',
    logger: silentLogger,
  });
}, 60_000);

afterAll(async () => {
  await hotApi?.close();
  await archivedApi?.close();
  await archive?.close();
  redis?.disconnect();
  await db?.drop();
});

/** Moves the finished runs picked for it to PostgreSQL and lets Redis forget them. */
async function splitBetweenStores(): Promise<void> {
  const moving = seeded.filter((s) => s.archived);
  const runs: ArchivedRun[] = moving.map((s) => ({
    checkpoint: s.checkpoint,
    version: 1,
    events: [],
    threadState: {},
    addsToThread: true,
  }));
  await archive.putRuns(runs);
  const store = new RedisRunStore({ redis, prefix, now: () => 20_000 });
  // As retention does: the run's keys go, its index entries stay (lists prune them).
  for (const s of moving) {
    const keys: Record<string, string> = { ...store.runKeys(s.checkpoint.identity.runId) };
    await redis.del(...Object.values(keys));
  }
}

interface Case {
  readonly key: keyof typeof KEYS;
  /** Path and query without limit and cursor. */
  readonly path: string;
}

/** Filters of GET /v1/runs, one at a time and combined. */
const RUN_LIST_CASES: Case[] = [
  { key: 'a', path: '/v1/runs?' },
  ...STATUSES.map((s): Case => ({ key: 'a', path: `/v1/runs?status=${s}` })),
  ...[...AGENTS, 'nobody'].map((a): Case => ({ key: 'a', path: `/v1/runs?agent=${a}` })),
  ...[...THREADS, 'th-none'].map((t): Case => ({ key: 'a', path: `/v1/runs?thread=${t}` })),
  ...['user-1', 'user-2', 'tenant-a', 'tenant-b', 'nobody'].map((f): Case => ({
    key: 'a',
    path: `/v1/runs?fairnessKey=${f}`,
  })),
  { key: 'b', path: '/v1/runs?' },
  { key: 'b', path: '/v1/runs?fairnessKey=tenant-b' },
  { key: 'b', path: '/v1/runs?fairnessKey=user-1' },
  { key: 'admin', path: '/v1/runs?tenant=tenant-a' },
  { key: 'admin', path: '/v1/runs?tenant=tenant-b&fairnessKey=user-2' },
  { key: 'a', path: '/v1/runs?agent=alpha&fairnessKey=user-1' },
  { key: 'a', path: '/v1/runs?status=done&thread=th-2' },
  { key: 'a', path: '/v1/runs?status=done&fairnessKey=tenant-a' },
  { key: 'a', path: '/v1/runs?status=waiting&fairnessKey=user-1' },
  { key: 'a', path: '/v1/runs?thread=th-1&fairnessKey=user-2&agent=beta' },
  { key: 'a', path: '/v1/runs?admission=queued' },
  { key: 'a', path: '/v1/runs?admission=queued&fairnessKey=user-1' },
  { key: 'a', path: '/v1/runs?agentVersion=v1' },
  { key: 'a', path: '/v1/runs?agentVersion=v2&status=done' },
  { key: 'a', path: '/v1/runs?agentVersion=v9' },
];

/** Filters of GET /v1/threads/:id/runs. */
const THREAD_RUN_CASES: Case[] = THREADS.flatMap((t) => [
  { key: 'a', path: `/v1/threads/${t}/runs?` },
  ...STATUSES.map((s): Case => ({ key: 'a', path: `/v1/threads/${t}/runs?status=${s}` })),
  ...AGENTS.map((a): Case => ({ key: 'a', path: `/v1/threads/${t}/runs?agent=${a}` })),
  { key: 'a', path: `/v1/threads/${t}/runs?status=done&agent=alpha` },
  { key: 'b', path: `/v1/threads/${t}/runs?` },
]);

/** Forged cursors and values a store could refuse: both paths must answer the same 4xx. */
const cursorOf = (value: unknown): string =>
  Buffer.from(JSON.stringify(value)).toString('base64url');
const REFUSED_CASES: Case[] = [
  ...[[1.5, 'x'], [-1e308, ''], [2 ** 63, 'x'], [1, 'a\0b'], 'x', [1]].map((c): Case => ({
    key: 'a',
    path: `/v1/runs?cursor=${cursorOf(c)}`,
  })),
  { key: 'a', path: `/v1/runs?cursor=${String(2 ** 63)}` },
  { key: 'a', path: '/v1/runs?agent=%00' },
  { key: 'a', path: '/v1/runs?agent=al%00pha' },
  { key: 'admin', path: '/v1/runs?tenant=tenant-a%00' },
  { key: 'a', path: '/v1/runs?fairnessKey=user%001' },
  { key: 'a', path: '/v1/runs?admission=waiting' },
  { key: 'a', path: `/v1/threads/th-1/runs?cursor=${cursorOf([1.5, 'x'])}` },
  { key: 'a', path: '/v1/threads/th-1/runs?agent=%00' },
];

/** Every page of the case at this page size: [status, body] each. */
async function pagesOf(base: string, c: Case, limit: number): Promise<unknown[]> {
  const client = new ApiClient(base, KEYS[c.key]);
  const pages: unknown[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `${c.path}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
    const page = await client.get<{ runs: { runId: string }[]; nextCursor: string | null }>(q);
    pages.push([page.status, page.body]);
    cursor = page.status === 200 ? page.body.nextCursor : null;
    if (pages.length > 100) throw new Error(`${q}: more than 100 pages`);
  } while (cursor);
  return pages;
}

async function answers(base: string, cases: readonly Case[]): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const c of cases)
    for (const limit of [1, 4, 100])
      out.set(`${c.key} ${c.path} limit=${limit}`, await pagesOf(base, c, limit));
  return out;
}

async function refusals(base: string): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const c of REFUSED_CASES) {
    const r = await new ApiClient(base, KEYS[c.key]).get<{ error?: { code?: string } }>(c.path);
    out.set(`${c.key} ${c.path}`, [r.status, r.body]);
  }
  return out;
}

describe('run lists with the archive on answer as Redis alone does', () => {
  it('every filter of GET /v1/runs and GET /v1/threads/:id/runs is covered here', () => {
    // A new query parameter fails this until a case above asks for it on both paths.
    const asked = (cases: readonly Case[]) =>
      new Set(
        cases
          .flatMap((c) => [...new URLSearchParams(c.path.split('?')[1]).keys()])
          .concat('cursor', 'limit'),
      );
    expect([...asked(RUN_LIST_CASES)].sort()).toEqual(
      Object.keys(ListRunsQuerySchema.shape).sort(),
    );
    expect([...asked(THREAD_RUN_CASES)].sort()).toEqual(
      Object.keys(ThreadRunsQuerySchema.shape).sort(),
    );
  });

  it('each filter, each page size, runs split between Redis and PostgreSQL: the same pages', async () => {
    const scheduleRuns: Case = { key: 'a', path: `/v1/schedules/${scheduleId}/runs?` };
    const cases = [...RUN_LIST_CASES, ...THREAD_RUN_CASES, scheduleRuns];
    const expected = await answers(hotApi.url, cases);
    const expectedRefusals = await refusals(hotApi.url);
    await splitBetweenStores();
    // The split is real: Redis alone now misses the archived runs.
    const hotAfter = await answers(hotApi.url, RUN_LIST_CASES.slice(0, 1));
    expect(hotAfter.get('a /v1/runs? limit=100')).not.toEqual(
      expected.get('a /v1/runs? limit=100'),
    );
    expect(
      await archive.holds(seeded.filter((s) => s.archived).map((s) => s.checkpoint.identity.runId)),
    ).toHaveProperty('size', seeded.filter((s) => s.archived).length);

    const got = await answers(archivedApi.url, cases);
    for (const [name, pages] of expected) expect(got.get(name), name).toEqual(pages);
    // Not vacuous: the fairness filter picks some runs and not others, on both stores.
    const mine = (
      expected.get('a /v1/runs?fairnessKey=user-1 limit=100') as [number, { runs: unknown[] }][]
    )[0]![1].runs;
    expect(mine.length).toBeGreaterThan(3);
    expect(mine.length).toBeLessThan(seeded.length / 2);

    const refused = await refusals(archivedApi.url);
    for (const [name, answer] of expectedRefusals) {
      expect(refused.get(name), name).toEqual(answer);
      expect((answer as [number])[0], name).toBe(400);
    }
  }, 120_000);
});
