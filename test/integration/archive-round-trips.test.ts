/**
 * The read seam's promise (issue 33): a run only the archive still has is read with one Redis
 * round trip (its tenant field, missing) and two PostgreSQL ones (its checkpoint, its events).
 * Counted at the servers' doors, not in Baton's code: Redis's MONITOR (commands of the API's
 * own connection that name the run) and every query a pg client sends with the run's id.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiClient, KEYS, type ApiCluster } from '@baton/testing/api-harness';
import { startArchivedStack, type ArchivedStack } from '@baton/testing/archive-stack';
import { waitFor } from '@baton/testing/worker-harness';

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

/** What `read` sends about `runId`: Redis commands of the API's connection, pg queries. */
async function roundTrips(
  runId: string,
  read: () => Promise<void>,
): Promise<{ redis: string[]; pg: string[] }> {
  const apiRedis = c.apis[0]!.api.runtime.redis;
  const info = String(await apiRedis.call('CLIENT', 'INFO'));
  const addr = /\baddr=(\S+)/.exec(info)?.[1];
  expect(addr).toBeDefined();
  const monitor = new Redis(inject('redisUrl'), { lazyConnect: true });
  await monitor.connect();
  const seen: string[] = [];
  const sentinel = `round-trips-${runId}-end`;
  let ended = false;
  const watching = await monitor.monitor();
  watching.on('monitor', (_time: string, args: string[], source: string) => {
    if (args.includes(sentinel)) ended = true;
    else if (!ended && source === addr && args.some((a) => a.includes(runId)))
      seen.push(args.join(' '));
  });
  const queries: string[] = [];
  const original = pg.Client.prototype.query;
  // Every pool query goes through its client's query: one call is one round trip.
  const counting = function (this: pg.Client, ...args: unknown[]): unknown {
    const [text, values] = args;
    if (Array.isArray(values) && values.includes(runId))
      queries.push(typeof text === 'string' ? text : JSON.stringify(text));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  };
  pg.Client.prototype.query = counting as typeof original;
  try {
    await read();
  } finally {
    pg.Client.prototype.query = original;
  }
  // Commands reach MONITOR in the order Redis ran them: the sentinel, sent after the read's
  // answer, comes after every command of the read.
  await c.h.client.redis.echo(sentinel);
  await waitFor(() => Promise.resolve(ended), 5_000, 'the MONITOR sentinel');
  watching.disconnect();
  monitor.disconnect();
  return { redis: seen, pg: queries };
}

describe('archived reads cost what the seam promises', () => {
  it('GET /v1/runs/:id of a run only the archive has: 1 Redis + 2 PostgreSQL round trips', async () => {
    const created = await api.createRun('assistant', 'count my round trips');
    const stream = await api.stream(`/v1/runs/${created.runId}/events`, { timeoutMs: 30_000 });
    expect(stream.status).toBe(200);
    const hot = await api.get(`/v1/runs/${created.runId}`);
    expect(hot.status).toBe(200);
    await stack.forgotten('tenant-a', created.threadId, [created.runId]);
    let cold: { status: number; body: unknown } | undefined;
    const trips = await roundTrips(created.runId, async () => {
      cold = await api.get(`/v1/runs/${created.runId}`);
    });
    expect(cold?.status).toBe(200);
    expect(cold?.body).toEqual(hot.body);
    expect(trips.redis).toHaveLength(1);
    expect(trips.pg).toHaveLength(2);
  });
});
