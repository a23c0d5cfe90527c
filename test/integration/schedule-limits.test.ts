/**
 * Per-tenant limits on schedules: one tenant created 10,000 schedules firing every second with
 * no 4xx. A tenant has at most SCHEDULES_MAX_PER_TENANT schedules (409 quota_exceeded, checked
 * atomically, so a burst of concurrent creates cannot overshoot), and every firing draws on the
 * tenant's RATE_LIMIT_PER_MINUTE: a firing over it is recorded as skipped, never dropped.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { ScheduleFirer, ScheduleService } from '@baton/runtime/internal';
import type { ErrorBody, ScheduleDetail } from '@baton/protocol';
import { ApiClient } from '@baton/testing/api-harness';
import { silentLogger, startHarness, type Harness } from '@baton/testing/worker-harness';

const KEY = 'sched-limits-key-123';
const OTHER = 'sched-limits-other-456';
const MAX = 3;
const PER_MINUTE = 2;

let h: Harness;
let api: RunningApi;
let a: ApiClient;
let other: ApiClient;

const body = {
  agent: 'assistant',
  input: { messages: [{ role: 'user' as const, content: 'weather in Paris?' }] },
  everyMs: 3_600_000,
};

beforeAll(async () => {
  h = await startHarness(inject('redisUrl'), createDemoAgents(systemClock), {
    workers: 1,
    overrides: { SCHEDULES: 'false', RATE_LIMIT_PER_MINUTE: String(PER_MINUTE) },
  });
  const config = loadApiConfig({
    REDIS_URL: h.config.REDIS_URL,
    BATON_PREFIX: h.prefix,
    API_KEYS: `lim-a:${KEY},lim-b:${OTHER}`,
    SCHEDULES_MAX_PER_TENANT: String(MAX),
    LOG_LEVEL: 'silent',
  });
  api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  a = new ApiClient(api.url, KEY);
  other = new ApiClient(api.url, OTHER);
});

afterAll(async () => {
  await api?.close();
  await h?.stop();
});

describe('schedule limits', () => {
  it('a tenant gets at most SCHEDULES_MAX_PER_TENANT schedules, even from concurrent creates; a 409 says the limit and how to raise it', async () => {
    const replies = await Promise.all(
      Array.from({ length: 12 }, () => a.post<ScheduleDetail>('/v1/schedules', body)),
    );
    const created = replies.filter((r) => r.status === 201);
    const refused = replies.filter((r) => r.status !== 201);
    expect(created).toHaveLength(MAX);
    for (const r of refused) {
      expect(r.status).toBe(409);
      const { error } = r.body as unknown as ErrorBody;
      expect(error.code).toBe('quota_exceeded');
      expect(error.message).toContain(`the limit is ${MAX}`);
      expect(error.message).toContain('SCHEDULES_MAX_PER_TENANT');
      expect(error.details).toMatchObject({ limit: MAX, count: MAX });
    }
    const list = await a.get<{ schedules: unknown[] }>('/v1/schedules?limit=100');
    expect(list.body.schedules).toHaveLength(MAX);
    // Nothing of a refused create is left for the repair sweep.
    const entries = await h.client.redis.zrange(h.client.keys.allSchedules, '0', '-1');
    expect(entries.filter((e) => e.includes('lim-a'))).toHaveLength(MAX);
    // Another tenant has its own limit; a deleted schedule frees its place.
    expect((await other.post('/v1/schedules', body)).status).toBe(201);
    const first = created[0]!.body.scheduleId;
    expect((await a.request('DELETE', `/v1/schedules/${first}`)).status).toBe(204);
    expect((await a.post('/v1/schedules', body)).status).toBe(201);
    expect((await a.post('/v1/schedules', body)).status).toBe(409);
  });

  it('firings draw on the tenant RATE_LIMIT_PER_MINUTE: one over it creates no run and is recorded as skipped (rate_limited)', async () => {
    const schedules = new ScheduleService(h.client);
    const firer = new ScheduleFirer(h.client, schedules);
    const stored = await schedules.create('lim-c', { ...body, everyMs: 1_000 });
    const id = stored.record.scheduleId;
    const base = Date.now();
    const results = [];
    for (let i = 0; i < PER_MINUTE + 2; i += 1)
      results.push(await firer.fire('lim-c', id, base + i * 1_000));
    const outcomes = results.map((r) => (r.kind === 'fired' ? r.firing.outcome : r.kind));
    expect(outcomes).toEqual(['created', 'created', 'skipped', 'skipped']);
    const skipped = results.slice(PER_MINUTE).map((r) => (r.kind === 'fired' ? r.firing : null));
    for (const firing of skipped) {
      expect(firing?.runId).toBeUndefined();
      expect(firing?.error?.code).toBe('rate_limited');
      expect(firing?.error?.message).toContain('RATE_LIMIT_PER_MINUTE');
    }
    // Recorded with the schedule, like every other firing.
    const recorded = await schedules.store.firing('lim-c', id, base + PER_MINUTE * 1_000);
    expect(recorded).toMatchObject({ outcome: 'skipped', error: { code: 'rate_limited' } });
    const runs = await h.client.redis.zrange(h.client.keys.tenantRuns('lim-c'), '0', '-1');
    expect(runs.filter((r) => r.startsWith(`${id}.`))).toHaveLength(PER_MINUTE);
    await schedules.delete('lim-c', id);
  });
});
