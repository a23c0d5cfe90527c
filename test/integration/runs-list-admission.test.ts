/**
 * Lists show admission (docs/fairness.md, issue 37 item 3): GET /v1/runs gives each run its
 * priority and fairness key, a run waiting for a slot its `queued` place, and
 * `?admission=queued` lists only those, newest first, in pages; a bad value is a 400.
 */
import type { CreateRunResponse, RunPage } from '@baton/protocol';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { holdingAgent } from '@baton/testing/holding-agent';
import { waitForStatus } from '@baton/testing/worker-harness';

// Every run holds its slot in this tool until the test lets go, so the queue stays put.
const { agent: holder, letGo } = holdingAgent();

let cluster: ApiCluster;
let api: ApiClient;
const ids: Record<string, string> = {};

async function create(name: string, options: Record<string, unknown>): Promise<CreateRunResponse> {
  const res = await api.post<CreateRunResponse>('/v1/runs', {
    agent: 'holder',
    input: { messages: [{ role: 'user', content: name }] },
    options,
  });
  expect(res.status).toBe(202);
  ids[name] = res.body.runId;
  return res.body;
}

beforeAll(async () => {
  cluster = await startApiCluster(inject('redisUrl'), [holder], {
    shared: { BATON_FAIRNESS: JSON.stringify({ tenants: { 'tenant-a': { maxRunsPerKey: 1 } } }) },
  });
  api = new ApiClient(cluster.apis[0]!.url, KEYS.a);
  expect((await create('first', { priority: 2, fairnessKey: 'alice' })).queued).toBeUndefined();
  expect((await create('second', { fairnessKey: 'alice' })).queued).toMatchObject({ position: 1 });
  expect((await create('third', { fairnessKey: 'alice' })).queued).toMatchObject({ position: 2 });
  expect((await create('bob', { priority: 4, fairnessKey: 'bob' })).queued).toBeUndefined();
  expect((await create('plain', {})).queued).toBeUndefined();
}, 60_000);

afterAll(async () => {
  letGo();
  await cluster?.stop();
});

it('GET /v1/runs shows each run priority, fairness key and, while it waits for a slot, its place', async () => {
  const page = await api.get<RunPage>('/v1/runs');
  expect(page.status).toBe(200);
  const byId = new Map(page.body.runs.map((r) => [r.runId, r]));
  expect(byId.get(ids['first']!)).toMatchObject({ priority: 2, fairnessKey: 'alice' });
  expect(byId.get(ids['first']!)?.queued).toBeUndefined();
  expect(byId.get(ids['second']!)).toMatchObject({
    status: 'created',
    priority: 3,
    fairnessKey: 'alice',
    queued: { reason: 'fairness_key_limit', position: 1, backlog: 2, inProgress: 1, limit: 1 },
  });
  expect(byId.get(ids['third']!)?.queued).toMatchObject({ position: 2, backlog: 2 });
  expect(byId.get(ids['bob']!)).toMatchObject({ priority: 4, fairnessKey: 'bob' });
  expect(byId.get(ids['bob']!)?.queued).toBeUndefined();
  // A run that names no key is its tenant's.
  expect(byId.get(ids['plain']!)).toMatchObject({ priority: 3, fairnessKey: 'tenant-a' });
});

it('?admission=queued lists only the runs waiting for a slot, newest first, in pages', async () => {
  const all = await api.get<RunPage>('/v1/runs?admission=queued');
  expect(all.body.runs.map((r) => r.runId)).toEqual([ids['third'], ids['second']]);
  expect(all.body.nextCursor).toBeNull();

  const one = await api.get<RunPage>('/v1/runs?admission=queued&limit=1');
  expect(one.body.runs.map((r) => r.runId)).toEqual([ids['third']]);
  expect(one.body.runs[0]?.queued).toMatchObject({ position: 2 });
  expect(one.body.nextCursor).not.toBeNull();
  const two = await api.get<RunPage>(
    `/v1/runs?admission=queued&limit=1&cursor=${encodeURIComponent(one.body.nextCursor!)}`,
  );
  expect(two.body.runs.map((r) => r.runId)).toEqual([ids['second']]);
  expect(two.body.nextCursor).toBeNull();

  // Combined with the other filters, and empty for another tenant.
  expect((await api.get<RunPage>('/v1/runs?admission=queued&fairnessKey=bob')).body.runs).toEqual(
    [],
  );
  expect((await api.withKey(KEYS.b).get<RunPage>('/v1/runs?admission=queued')).body).toEqual({
    runs: [],
    nextCursor: null,
  });
});

it('a bad admission filter is a 400 validation_failed naming the parameter', async () => {
  const bad = await api.get<{ error: { code: string; message: string } }>(
    '/v1/runs?admission=waiting',
  );
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('validation_failed');
  expect(JSON.stringify(bad.body)).toContain('admission');
});

it('once the slots free, the queued runs start and the filter lists none', async () => {
  letGo();
  for (const name of ['first', 'second', 'third'])
    await waitForStatus(cluster.h, ids[name]!, ['done'], 30_000);
  const page = await api.get<RunPage>('/v1/runs?admission=queued');
  expect(page.body).toEqual({ runs: [], nextCursor: null });
  const listed = await api.get<RunPage>('/v1/runs');
  for (const run of listed.body.runs) expect(run.queued).toBeUndefined();
}, 60_000);
