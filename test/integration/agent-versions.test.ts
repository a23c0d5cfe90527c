/**
 * Issue 34 items 1–3, small: runs keep the agent version they were created on. A v2 worker (a
 * renamed tool, a changed schema) starting beside v1's never runs a v1 run; new runs get the
 * newest live version, an operator's promote and rollback change that at once; a v1 run resumed
 * while no v1 worker lives waits as `version_unavailable` (no job) and finishes on v1 when one
 * returns. The 500-run version is test/faults/agent-versions-scale.test.ts.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  ScriptedModel,
  defineTool,
  type ScriptedTurn,
  toolResult,
  type AgentDefinition,
} from '@baton/core';
import type { AgentDescriptor, RunView } from '@baton/protocol';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { BatonRuntime } from '@baton/runtime';
import { BatonWorker } from '@baton/worker';
import { ApiClient } from '@baton/testing/api-harness';
import { runCli } from '@baton/testing/cli';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';

const KEY = 'versions-tenant-key-123';
const ADMIN = 'versions-admin-key-123';

/** Tool executions and model calls per version, and the runs each version touched. */
const probes = { tools: new Map<string, number>(), models: new Map<string, number>() };
const touched = new Map<string, Set<string>>();
const count = (m: Map<string, number>, v: string): void => {
  m.set(v, (m.get(v) ?? 0) + 1);
};

/** `deploy` v1 looks up by id (string); v2 renamed the tool and changed its schema. */
function deployAgent(version: 'v1' | 'v2', name = 'deploy'): AgentDefinition {
  const lookup = defineTool({
    name: version === 'v1' ? 'lookup' : 'find_service',
    description: 'Finds a service',
    inputSchema:
      version === 'v1' ? z.object({ id: z.string() }) : z.object({ key: z.number().int() }),
    execute: async (_args, ctx) => {
      count(probes.tools, version);
      if (!touched.has(version)) touched.set(version, new Set());
      touched.get(version)?.add(ctx.identity.runId);
      return toolResult.success({ ok: true });
    },
  });
  const ship = defineTool({
    name: 'ship',
    description: 'Ships (needs a human)',
    inputSchema: z.object({}),
    approval: { message: 'ship?', responseSchema: z.object({}) },
    execute: async () => toolResult.success({ shipped: version }),
  });
  return {
    name,
    version,
    ...(name === 'deploy' ? {} : { versioning: 'auto-upgrade' as const }),
    model: new ScriptedModel((request): ScriptedTurn => {
      count(probes.models, version);
      if (request.step === 1)
        return {
          text: 'checking',
          toolCalls: [
            { name: lookup.name, arguments: version === 'v1' ? { id: 'a' } : { key: 1 } },
            { name: 'ship' },
          ],
        };
      return { text: `done on ${version}` };
    }),
    tools: [lookup, ship],
  };
}

describe('agent versions: pinned runs, promote, rollback, version_unavailable', () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const config = testConfig(redisUrl, prefix);
  let client: BatonRuntime;
  let api: RunningApi;
  let http: ApiClient;
  let admin: ApiClient;
  const workers: BatonWorker[] = [];

  const startWorker = async (
    version: 'v1' | 'v2',
    id: string,
    name = 'deploy',
  ): Promise<BatonWorker> => {
    const worker = new BatonWorker({
      config: { ...config, WORKER_ID: id },
      agents: [deployAgent(version, name)],
      logger: silentLogger,
    });
    await worker.start();
    workers.push(worker);
    return worker;
  };
  const create = async (agent = 'deploy'): Promise<string> => {
    const r = await http.post<{ runId: string }>('/v1/runs', {
      agent,
      input: { messages: [{ role: 'user', content: 'ship it' }] },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    return r.body.runId;
  };
  const view = async (runId: string): Promise<RunView> =>
    (await http.get<RunView>(`/v1/runs/${runId}`)).body;
  const waitStatus = async (runId: string, status: string): Promise<RunView> => {
    let last: RunView | undefined;
    await waitFor(
      async () => {
        last = await view(runId);
        return last.status === status;
      },
      15_000,
      `${runId} ${status}`,
    );
    return last as RunView;
  };
  const approve = async (runId: string): Promise<void> => {
    const v = await waitStatus(runId, 'waiting');
    const call = v.await?.calls[0]?.toolCallId as string;
    const r = await http.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ toolCallId: call, action: 'resume', payload: {} }],
    });
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  };

  beforeAll(async () => {
    client = new BatonRuntime({ config, logger: silentLogger });
    api = await startApi({
      config: loadApiConfig({
        REDIS_URL: redisUrl,
        BATON_PREFIX: prefix,
        API_KEYS: `tenant-a:${KEY}`,
        ADMIN_KEYS: `ops:${ADMIN}`,
        LOG_LEVEL: 'silent',
      }),
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger,
    });
    http = new ApiClient(api.url, KEY);
    admin = new ApiClient(api.url, ADMIN);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop(500)));
    await api?.close();
    await client?.close();
  });

  it(
    'routes by version, promotes, rolls back and parks runs of a version nobody serves',
    {
      timeout: 60_000,
    },
    async () => {
      const w1 = await startWorker('v1', 'v1-a');
      const a = await create();
      const b = await create();
      expect((await waitStatus(a, 'waiting')).agentVersion).toBe('v1');
      await waitStatus(b, 'waiting');

      // v2 starts beside v1: a queue of its own, and new runs get it (the newest live).
      const w2 = await startWorker('v2', 'v2-a');
      expect(w2.taskQueue).not.toBe(w1.taskQueue);
      await new Promise((r) => setTimeout(r, 600)); // the API's 500 ms version cache
      const c = await create();
      expect((await waitStatus(c, 'waiting')).agentVersion).toBe('v2');

      // A v1 run resumed now runs on v1, whatever else is up.
      await approve(a);
      expect((await waitStatus(a, 'done')).lastAssistantMessage).toBe('done on v1');
      await approve(c);
      expect((await waitStatus(c, 'done')).lastAssistantMessage).toBe('done on v2');
      expect([...(touched.get('v1') ?? [])].sort()).toEqual([a, b].sort());
      expect([...(touched.get('v2') ?? [])]).toEqual([c]);

      // Promote and rollback are admin-only and take effect for the next run.
      expect((await http.post('/v1/agents/deploy/promote', { version: 'v1' })).status).toBe(403);
      const bad = await admin.post<{ code: string }>('/v1/agents/deploy/promote', {
        version: 'v9',
      });
      expect(bad.status).toBe(404);
      const promoted = await admin.post('/v1/agents/deploy/promote', { version: 'v1' });
      expect(promoted.body).toEqual({
        agent: 'deploy',
        currentVersion: 'v1',
        previousVersion: 'v2',
      });
      const d = await create();
      expect((await view(d)).agentVersion).toBe('v1');
      // The same through the CLI (admin key): rollback goes back to v2.
      const cli = { BATON_URL: api.url, BATON_API_KEY: ADMIN };
      const rolled = await runCli(['agents', 'rollback', 'deploy', '--json'], cli);
      expect(rolled.code, rolled.stderr).toBe(0);
      expect(JSON.parse(rolled.stdout)).toEqual({
        agent: 'deploy',
        currentVersion: 'v2',
        previousVersion: 'v1',
      });
      const e = await create();
      expect((await view(e)).agentVersion).toBe('v2');

      const listed = await http.get<{ runs: { runId: string; agentVersion?: string }[] }>(
        '/v1/runs?agent=deploy&agentVersion=v1',
      );
      expect(listed.body.runs.map((r) => r.runId).sort()).toEqual([a, b, d].sort());

      const agents = await http.get<{ agents: AgentDescriptor[] }>('/v1/agents');
      const deploy = agents.body.agents.find((x) => x.name === 'deploy');
      expect(deploy?.currentVersion).toBe('v2');
      const byVersion = new Map(deploy?.versions?.map((v) => [v.version, v]));
      const listing = await runCli(['agents'], { ...cli, BATON_API_KEY: KEY });
      expect(listing.stdout).toMatch(/version v2\s+current/);
      expect(byVersion.get('v1')?.workers).toEqual(['v1-a']);
      expect(byVersion.get('v2')?.workers).toEqual(['v2-a']);
      // v1: b and d not finished (b waits for its approval); v2: e.
      expect(byVersion.get('v1')?.runs.inProgress).toBe(2);
      expect(byVersion.get('v1')?.runs.waiting).toBeGreaterThanOrEqual(1);

      // v1's worker stops: b, approved now, waits for a v1 worker with no job, never on v2.
      await w1.stop(500);
      workers.splice(workers.indexOf(w1), 1);
      await new Promise((r) => setTimeout(r, 600));
      await approve(b);
      await waitFor(
        async () => (await view(b)).queued?.reason === 'version_unavailable',
        10_000,
        'b to wait for its version',
      );
      expect((await view(b)).waitingForWorker).toBe(true);
      const toolsBefore = probes.tools.get('v2') ?? 0;
      await startWorker('v1', 'v1-b');
      expect((await waitStatus(b, 'done')).lastAssistantMessage).toBe('done on v1');
      expect((await view(b)).queued).toBeUndefined();
      // b's second step ran on v1 (model); v2 executed nothing for it.
      expect(touched.get('v2')?.has(b)).toBe(false);
      expect(probes.tools.get('v2') ?? 0).toBeGreaterThanOrEqual(toolsBefore);
    },
  );

  it(
    "an 'auto-upgrade' agent's run takes its next step on the current version",
    {
      timeout: 30_000,
    },
    async () => {
      await startWorker('v1', 'rolling-v1', 'rolling');
      const run = await create('rolling');
      expect((await waitStatus(run, 'waiting')).agentVersion).toBe('v1');
      await startWorker('v2', 'rolling-v2', 'rolling');
      await new Promise((r) => setTimeout(r, 600));
      await approve(run);
      const done = await waitStatus(run, 'done');
      // Created on v1 (its record says so), its second step ran on v2.
      expect(done.agentVersion).toBe('v1');
      expect(done.lastAssistantMessage).toBe('done on v2');
    },
  );
});
