import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import type { ErrorBody, RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { spawnApi, type ApiProcess } from '@baton/testing/api-process';

/** Opens a stream and leaves it open; resolves with the status (errors after that are ignored). */
function openStream(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      res.on('error', () => undefined);
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Limits hold for the cluster, not per instance: an in-process API and a second API PROCESS
 * share one Redis prefix; what one counts, the other sees.
 */
describe('limits shared by API instances through Redis', () => {
  let c: ApiCluster;
  let other: ApiProcess;
  let here: ApiClient;
  let there: ApiClient;
  const env = {
    RATE_LIMIT_PER_MINUTE: '12',
    SSE_MAX_PER_TENANT: '2',
    SSE_LEASE_MS: '1000',
    AUTH_FAILURES_PER_MINUTE: '4',
  };
  const spawnOther = (): Promise<ApiProcess> =>
    spawnApi({
      redisUrl: inject('redisUrl'),
      prefix: c.h.prefix,
      keys: c.config.API_KEYS,
      env: { ...env, ADMIN_KEYS: c.config.ADMIN_KEYS },
    });
  const killOther = async (): Promise<void> => {
    other?.kill('SIGKILL');
    await other?.exited;
  };
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), { env });
    other = await spawnOther();
    here = new ApiClient(c.apis[0]!.url, KEYS.a);
    there = new ApiClient(other.url, KEYS.a);
  });
  afterAll(async () => {
    await killOther();
    await c?.stop();
  });

  it('SSE_MAX_PER_TENANT counts streams on both instances, and a killed instance leaks no slot', async () => {
    // tenant-b: its own rate-limit budget, untouched by the other tests
    const b = here.withKey(KEYS.b);
    const { runId } = await b.createRun('assistant');
    await b.stream(`/v1/runs/${runId}/events?until=suspended`);
    const path = `/v1/runs/${runId}/events`;
    const last = {
      'last-event-id': String((await b.get<RunSnapshot>(`/v1/runs/${runId}`)).body.lastSeq),
    };
    // one stream on each instance: the tenant's two slots
    const onThere = openStream(`${other.url}${path}`, {
      ...last,
      authorization: `Bearer ${KEYS.b}`,
    });
    expect(await onThere).toBe(200);
    const onHere = b.stream(path, { headers: last, timeoutMs: 1_500 });
    await expect.poll(() => c.apis[0]!.api.context.sseLimiter.count('tenant-b')).toBe(2);
    const third = await b.stream(path, { headers: last, timeoutMs: 1_500 });
    expect(third.status).toBe(429);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    await onHere;
    // the other process dies holding its stream: its lease expires instead of leaking
    await killOther();
    await expect
      .poll(() => c.apis[0]!.api.context.sseLimiter.count('tenant-b'), { timeout: 10_000 })
      .toBe(0);
    const after = await b.stream(path, { headers: last, timeoutMs: 500 });
    expect(after.status).toBe(200);
    await b.post(`/v1/runs/${runId}/cancel`);
    other = await spawnOther();
    there = new ApiClient(other.url, KEYS.a);
  });

  it('RATE_LIMIT_PER_MINUTE is one budget for the tenant across instances', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 14; i += 1)
      statuses.push((await (i % 2 === 0 ? here : there).get('/v1/agents')).status);
    expect(statuses).toEqual([...Array.from({ length: 12 }, () => 200), 429, 429]);
    const limited = await there.get<ErrorBody>('/v1/agents');
    expect(limited.body.error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('failed authentications are limited per client address across instances, with Retry-After', async () => {
    const wrong = [here.withKey('wrong-key-0000001'), there.withKey('wrong-key-0000002')];
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) statuses.push((await wrong[i % 2]!.get('/v1/agents')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
    // once over the limit, the address is refused before any key is checked
    const blocked = await here.withKey(KEYS.admin).get<ErrorBody>('/v1/agents');
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(blocked.body.error.message).toMatch(/failed authentications/);
  });
});
