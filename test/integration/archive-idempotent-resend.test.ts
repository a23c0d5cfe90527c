/**
 * An Idempotency-Key resent after its record expired, once its run lives only in PostgreSQL or
 * was deleted: the run's id derives from the key, so the resend answers the archived run, or is
 * refused (409 idempotency_conflict) for a deleted one; it never runs the request a second time
 * under the same id.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiClient, KEYS, type ApiCluster } from '@baton/testing/api-harness';
import { startArchivedStack, type ArchivedStack } from '@baton/testing/archive-stack';
import { waitFor } from '@baton/testing/worker-harness';
import type { CreateRunResponse } from '@baton/protocol';

const TENANT = 'tenant-a';
let stack: ArchivedStack;
let c: ApiCluster;
let api: ApiClient;

beforeAll(async () => {
  stack = await startArchivedStack('archive_idempotent_resend', inject('redisUrl'));
  c = stack.c;
  api = new ApiClient(c.apis[0]!.url, KEYS.a);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

/** A keyed run that finished; its key's record then expires (deleted here, as its TTL would). */
async function finishedKeyedRun(key: string, content: string) {
  const body = { agent: 'assistant', input: { messages: [{ role: 'user', content }] } };
  const headers = { 'idempotency-key': key };
  const first = await api.post<CreateRunResponse>('/v1/runs', body, headers);
  expect(first.status).toBe(202);
  const { runId, threadId } = first.body;
  await waitFor(
    async () => (await api.get<{ status: string }>(`/v1/runs/${runId}`)).body.status === 'done',
    30_000,
    `run ${runId} to be done`,
  );
  const expire = () => c.h.client.redis.del(c.h.client.keys.idempotency(TENANT, 'create-run', key));
  return { body, headers, runId, threadId, expire };
}

describe('an Idempotency-Key resent after it expired', () => {
  it('answers the archived run, and runs nothing again', async () => {
    const run = await finishedKeyedRun(`archived-${Date.now()}`, 'archived once');
    await stack.forgotten(TENANT, run.threadId, [run.runId]);
    await run.expire();
    const again = await api.post<CreateRunResponse>('/v1/runs', run.body, run.headers);
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ runId: run.runId, threadId: run.threadId, status: 'done' });
    // Not created again: Redis holds no second copy, the archive's is the only one.
    expect(await c.h.client.redis.exists(c.h.client.keys.run(run.runId).cp)).toBe(0);
    const read = await api.get<{ status: string }>(`/v1/runs/${run.runId}`);
    expect(read.status).toBe(200);
    expect(read.body.status).toBe('done');
  });

  it('is refused with 409 idempotency_conflict once its run was deleted', async () => {
    const run = await finishedKeyedRun(`deleted-${Date.now()}`, 'deleted once');
    expect((await api.request('DELETE', `/v1/runs/${run.runId}`)).status).toBe(204);
    await run.expire();
    const again = await api.post('/v1/runs', run.body, run.headers);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: { code: 'idempotency_conflict' } });
    expect(await c.h.client.redis.exists(c.h.client.keys.run(run.runId).cp)).toBe(0);
    expect((await api.get(`/v1/runs/${run.runId}`)).status).toBe(404);
  });
});
