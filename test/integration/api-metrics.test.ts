import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { monitorCommands } from '@baton/testing/redis-monitor';

const METRICS_KEY = 'metrics-scrape-key-0123456789';

describe('/metrics', () => {
  let c: ApiCluster;
  let pub: ApiCluster;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: { METRICS_KEY },
    });
    pub = await startApiCluster(inject('redisUrl'), [], {
      workers: 0,
      env: { METRICS_PUBLIC: 'true' },
    });
  });
  afterAll(async () => {
    await Promise.all([c.stop(), pub.stop()]);
  });

  it('needs METRICS_KEY or an admin key; tenant keys and scrapers without a key are refused', async () => {
    const base = c.apis[0]!.url;
    expect((await new ApiClient(base).get('/metrics')).status).toBe(401);
    expect((await new ApiClient(base, 'wrong-key-0123456789').get('/metrics')).status).toBe(401);
    expect((await new ApiClient(base, KEYS.a).get('/metrics')).status).toBe(403);
    expect((await new ApiClient(base, METRICS_KEY).get('/metrics')).status).toBe(200);
    expect((await new ApiClient(base, KEYS.admin).get('/metrics')).status).toBe(200);
    expect((await new ApiClient(pub.apis[0]!.url).get('/metrics')).status).toBe(200);
  });

  it('a scrape reads no run record: its Redis cost does not grow with the number of runs', async () => {
    const a = new ApiClient(c.apis[0]!.url, KEYS.a);
    const scraper = new ApiClient(c.apis[0]!.url, METRICS_KEY);
    const runs = [];
    for (let i = 0; i < 5; i += 1) runs.push((await a.createRun('assistant')).runId);
    for (const runId of runs) await a.stream(`/v1/runs/${runId}/events?until=suspended`);
    // Workers quiet (their reconciler reads run records too): only the API talks to Redis now.
    await Promise.all(c.h.workers.map((w) => w.stop(500)));
    let body = '';
    const commands = await monitorCommands(inject('redisUrl'), async () => {
      body = (await scraper.get<string>('/metrics')).body;
    });
    const mine = commands.filter((cmd) => cmd.includes(`${c.h.prefix}:`));
    expect(mine.filter((cmd) => cmd.includes('{run:'))).toEqual([]);
    expect(mine.some((cmd) => cmd.includes('"zcard"'))).toBe(true);
    expect(body).toMatch(/baton_runs\{activity="active"\} \d+/);
    expect(body).toMatch(/baton_runs\{activity="waiting"\} 5/);
    // A tenant appears only in its fairness series: its total (key="*") and its default key
    // (its own id), both tracked (docs/fairness.md); never with a run id.
    const tenantLines = body.split('\n').filter((line) => line.includes('tenant-a'));
    for (const line of tenantLines)
      expect(line).toMatch(
        /^baton_fairness_runs\{tenant="tenant-a",key="(\*|tenant-a)",state="\w+"\} \d+$/,
      );
    for (const runId of runs) expect(body).not.toContain(runId);
    // Tool durations of every run, counted by the workers that committed the results (they
    // flushed their counts as they stopped), not heard over pub/sub.
    const tools = /^baton_tool_duration_seconds_count\{tool="get_weather"\} (\d+)/m.exec(body);
    expect(Number(tools?.[1])).toBeGreaterThanOrEqual(runs.length);
  });
});
