/**
 * Issue 34's acceptance for agent versions, at scale (faults project; VERSIONS_RUNS scales it,
 * default 500 with 40 % waiting for an approval): v1 runs in flight and waiting for approvals;
 * a v2 worker (a renamed tool, a changed schema) starts while v1's keep running: every v1 run
 * finishes on v1 code (tool executions and model calls counted per version), none touches v2.
 * A promote on one API reaches new runs created on another within 1 s, and so does a rollback.
 * With v1's workers stopped, its runs resumed by approvals say `version_unavailable`, hold no
 * job, and finish on v1 when a v1 worker returns.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  ScriptedModel,
  defineTool,
  toolResult,
  type AgentDefinition,
  type ScriptedTurn,
} from '@baton/core';
import type { RunView } from '@baton/protocol';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { BatonRuntime, systemClock } from '@baton/runtime';
import { BatonWorker } from '@baton/worker';
import { ApiClient } from '@baton/testing/api-harness';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';

const RUNS = Number(process.env['VERSIONS_RUNS'] ?? 500);
const WAITING = Math.round(RUNS * 0.4);
const LATE = Math.max(5, Math.round(RUNS / 25));
const KEY = 'versions-scale-tenant-123';
const ADMIN = 'versions-scale-admin-123';

type Version = 'v1' | 'v2';
/** Per version: the runs whose tools it executed and whose model calls it made. */
const tools = { v1: new Set<string>(), v2: new Set<string>() };
const models = { v1: new Set<string>(), v2: new Set<string>() };
let toolCount = { v1: 0, v2: 0 };

function deployAgent(version: Version): AgentDefinition {
  const lookup = defineTool({
    name: version === 'v1' ? 'lookup' : 'find_service',
    description: 'Finds a service',
    inputSchema:
      version === 'v1' ? z.object({ id: z.string() }) : z.object({ key: z.number().int() }),
    execute: async (_args, ctx) => {
      tools[version].add(ctx.identity.runId);
      toolCount = { ...toolCount, [version]: toolCount[version] + 1 };
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
    name: 'deploy',
    version,
    model: new ScriptedModel(
      (request): ScriptedTurn => {
        models[version].add(request.runId);
        const first = request.messages.find((m) => m.role === 'user');
        const wantsApproval =
          typeof first?.content === 'string' && first.content.startsWith('approve');
        if (request.step === 1)
          return {
            text: 'checking',
            chunkDelayMs: 20,
            toolCalls: [
              { name: lookup.name, arguments: version === 'v1' ? { id: 'a' } : { key: 1 } },
              ...(wantsApproval ? [{ name: 'ship' }] : []),
            ],
          };
        return { text: `done on ${version}` };
      },
      { clock: systemClock },
    ),
    tools: [lookup, ship],
  };
}

describe(`agent versions at scale: ${String(RUNS)} v1 runs, ${String(WAITING)} waiting for approval`, () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const config = testConfig(redisUrl, prefix);
  let client: BatonRuntime;
  const apis: RunningApi[] = [];
  let a: ApiClient;
  let b: ApiClient;
  let admin: ApiClient;
  const workers = new Map<string, BatonWorker>();

  const startWorker = async (version: Version, id: string): Promise<void> => {
    const worker = new BatonWorker({
      config: { ...config, WORKER_ID: id },
      agents: [deployAgent(version)],
      logger: silentLogger,
    });
    await worker.start();
    workers.set(id, worker);
  };
  const stopWorker = async (id: string): Promise<void> => {
    await workers.get(id)?.stop(2_000);
    workers.delete(id);
  };
  const create = async (
    http: ApiClient,
    content: string,
  ): Promise<{ runId: string; v: string }> => {
    const r = await http.post<{ runId: string; agentVersion?: string }>('/v1/runs', {
      agent: 'deploy',
      input: { messages: [{ role: 'user', content }] },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    return { runId: r.body.runId, v: r.body.agentVersion ?? '' };
  };
  const createMany = async (n: number, content: (i: number) => string): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 25) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(25, n - i) }, async (_, j) => {
          const made = await create(a, content(i + j));
          expect(made.v).toBe('v1');
          return made.runId;
        }),
      );
      ids.push(...batch);
    }
    return ids;
  };
  const statuses = async (ids: readonly string[]): Promise<(string | undefined)[]> =>
    (await Promise.all(ids.map((id) => client.store.meta(id)))).map((m) => m?.status);
  const approveAll = async (ids: readonly string[]): Promise<void> => {
    for (let i = 0; i < ids.length; i += 25)
      await Promise.all(
        ids.slice(i, i + 25).map(async (id) => {
          const v = (await a.get<RunView>(`/v1/runs/${id}`)).body;
          const call = v.await?.calls[0]?.toolCallId as string;
          const r = await a.post(`/v1/runs/${id}/decisions`, {
            decisions: [{ toolCallId: call, action: 'resume', payload: {} }],
          });
          expect(r.status, JSON.stringify(r.body)).toBe(202);
        }),
      );
  };
  /** How long until a run created on API b gets `version` (ms), creating one every 50 ms. */
  const untilNewRunsGet = async (version: Version): Promise<number> => {
    const started = Date.now();
    for (;;) {
      const made = await create(b, 'plain');
      if (made.v === version) return Date.now() - started;
      if (Date.now() - started > 5_000) throw new Error(`new runs never got ${version}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  beforeAll(async () => {
    client = new BatonRuntime({ config, logger: silentLogger });
    for (let i = 0; i < 2; i += 1)
      apis.push(
        await startApi({
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
        }),
      );
    a = new ApiClient(apis[0]!.url, KEY);
    b = new ApiClient(apis[1]!.url, KEY);
    admin = new ApiClient(apis[0]!.url, ADMIN);
  });

  afterAll(async () => {
    await Promise.all([...workers.values()].map((w) => w.stop(500)));
    await Promise.all(apis.map((x) => x.close()));
    await client?.close();
  });

  it(
    'v1 runs finish on v1 while v2 serves new runs; promote and rollback within 1 s; v1 runs wait for a v1 worker',
    {
      timeout: 170_000,
    },
    async () => {
      await startWorker('v1', 'v1-a');
      await startWorker('v1', 'v1-b');
      const waiting = await createMany(WAITING, (i) => `approve ${String(i)}`);
      const plain = await createMany(RUNS - WAITING, (i) => `plain ${String(i)}`);
      const v1Runs = [...waiting, ...plain];

      // v2 starts while v1's runs are in flight; new runs move to it (newest live), v1's do not.
      await startWorker('v2', 'v2-a');
      const toV2 = await untilNewRunsGet('v2');
      await waitFor(
        async () => (await statuses(waiting)).every((s) => s === 'waiting'),
        120_000,
        'the approval runs to wait',
      );
      await approveAll(waiting);
      await waitFor(
        async () => (await statuses(v1Runs)).every((s) => s === 'done'),
        120_000,
        `${String(RUNS)} v1 runs to finish`,
      );
      for (const id of v1Runs) {
        expect(tools.v1.has(id) && models.v1.has(id)).toBe(true);
        expect(tools.v2.has(id) || models.v2.has(id)).toBe(false);
      }
      const answers = await Promise.all(
        waiting.slice(0, 20).map(async (id) => (await a.get<RunView>(`/v1/runs/${id}`)).body),
      );
      expect(answers.every((v) => v.lastAssistantMessage === 'done on v1')).toBe(true);

      // Promote on API a: runs created on API b get v1 within 1 s; a rollback brings v2 back.
      expect((await admin.post('/v1/agents/deploy/promote', { version: 'v1' })).status).toBe(200);
      const toV1 = await untilNewRunsGet('v1');
      expect((await admin.post('/v1/agents/deploy/rollback')).status).toBe(200);
      const backToV2 = await untilNewRunsGet('v2');
      console.info(
        `[agent-versions-scale] ${String(RUNS)} v1 runs done on v1 (tools v1 ${String(toolCount.v1)}, v2 ${String(toolCount.v2)}); new runs on v2 after ${String(toV2)} ms, promote ${String(toV1)} ms, rollback ${String(backToV2)} ms`,
      );
      expect(toV1).toBeLessThan(1_000);
      expect(backToV2).toBeLessThan(1_000);

      // v1 runs waiting for approvals while v1's workers stop: resumed, they wait for v1.
      expect((await admin.post('/v1/agents/deploy/promote', { version: 'v1' })).status).toBe(200);
      const late = await createMany(LATE, (i) => `approve late ${String(i)}`);
      await waitFor(
        async () => (await statuses(late)).every((s) => s === 'waiting'),
        60_000,
        'the late runs to wait',
      );
      await stopWorker('v1-a');
      await stopWorker('v1-b');
      await new Promise((r) => setTimeout(r, 600)); // the APIs' 500 ms liveness cache
      await approveAll(late);
      await waitFor(
        async () => {
          const views = await Promise.all(
            late.map(async (id) => (await a.get<RunView>(`/v1/runs/${id}`)).body),
          );
          return views.every((v) => v.queued?.reason === 'version_unavailable');
        },
        10_000,
        'the late runs to say version_unavailable',
      );
      const agents = await a.get<{
        agents: {
          name: string;
          versions?: { version: string; runs: { versionUnavailable: number } }[];
        }[];
      }>('/v1/agents');
      const v1 = agents.body.agents
        .find((x) => x.name === 'deploy')
        ?.versions?.find((v) => v.version === 'v1');
      expect(v1?.runs.versionUnavailable).toBe(LATE);
      await new Promise((r) => setTimeout(r, 1_000));
      expect((await statuses(late)).every((s) => s === 'waiting')).toBe(true);
      await startWorker('v1', 'v1-c');
      await waitFor(
        async () => (await statuses(late)).every((s) => s === 'done'),
        60_000,
        'the late runs to finish on v1',
      );
      for (const id of late) expect(tools.v2.has(id) || models.v2.has(id)).toBe(false);
    },
  );
});
