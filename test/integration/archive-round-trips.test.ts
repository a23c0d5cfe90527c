/**
 * The read seam's promise (issue 33): a run only the archive still has is read with one Redis
 * round trip (its tenant field, missing) and two PostgreSQL ones (its checkpoint, its events).
 * Counted at the servers' doors, not in Baton's code: Redis's MONITOR (commands of the API's
 * own connection that name the run) and every query a pg client sends with the run's id.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiClient, KEYS, type ApiCluster } from '@baton/testing/api-harness';
import { startArchivedStack, type ArchivedStack } from '@baton/testing/archive-stack';
import { countRoundTrips } from '@baton/testing/round-trips';

let stack: ArchivedStack;
let c: ApiCluster;
let api: ApiClient;

beforeAll(async () => {
  stack = await startArchivedStack('archive_round_trips', inject('redisUrl'));
  c = stack.c;
  api = new ApiClient(c.apis[0]!.url, KEYS.a);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

describe('archived reads cost what the seam promises', () => {
  it('GET /v1/runs/:id of a run only the archive has: 1 Redis + 2 PostgreSQL round trips', async () => {
    const created = await api.createRun('assistant', 'count my round trips');
    const stream = await api.stream(`/v1/runs/${created.runId}/events`, { timeoutMs: 30_000 });
    expect(stream.status).toBe(200);
    const hot = await api.get(`/v1/runs/${created.runId}`);
    expect(hot.status).toBe(200);
    await stack.forgotten('tenant-a', created.threadId, [created.runId]);
    let cold: { status: number; body: unknown } | undefined;
    const trips = await countRoundTrips(
      {
        redisUrl: inject('redisUrl'),
        connection: c.apis[0]!.api.runtime.redis,
        probe: c.h.client.redis,
        id: created.runId,
      },
      async () => {
        cold = await api.get(`/v1/runs/${created.runId}`);
      },
    );
    expect(cold?.status).toBe(200);
    expect(cold?.body).toEqual(hot.body);
    expect(trips.redis).toHaveLength(1);
    expect(trips.pg).toHaveLength(2);
  });
});
