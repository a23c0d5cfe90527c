/**
 * `npm start` (scripts/start.ts) as a supervisor: its banner names an agent BATON_AGENTS loaded
 * (not the demo's assistant), an agent module outside the repository imports @baton/core and zod
 * with no node_modules of its own, a worker killed under it is restarted alone while a run
 * waits for a decision, which then completes, and so is a killed API.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { BatonClient } from '@baton/client';
import { freePort, uniquePrefix } from '@baton/testing/redis';
import { startProcess, type StartProcess } from '@baton/testing/start-process';
import { waitFor } from '@baton/testing/worker-harness';
import { RestartBudget } from '../../scripts/start/restart-budget.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// Outside the repository, with bare imports and no node_modules: the issue's
// `BATON_AGENTS=../x/agents.ts npm start` ("Cannot find package 'zod'").
const OUTSIDE = `
import { defineTool, toolResult, type AgentDefinition, type ModelPort } from '@baton/core';
import { z } from 'zod';

const stamp = defineTool({
  name: 'stamp',
  description: 'Stamps a text, after approval',
  inputSchema: z.object({ text: z.string() }),
  approval: { message: 'Stamp it?' },
  execute: async ({ text }) => toolResult.success({ stamped: 'STAMPED ' + text }),
});
const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
const model: ModelPort = {
  id: 'outside:stamper',
  async *stream(request) {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') {
      yield { type: 'text-delta', delta: 'tool said ' + JSON.stringify(last.content) };
      yield { type: 'finish', usage, finishReason: 'stop' };
      return;
    }
    yield { type: 'tool-call', id: 'c' + request.step, name: 'stamp', arguments: { text: last?.role === 'user' ? last.content : '' } };
    yield { type: 'finish', usage, finishReason: 'tool-calls' };
  },
};
export const stamper: AgentDefinition = { name: 'outside-stamper', model, tools: [stamp] };
`;

let dir: string;
let start: StartProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-start-outside-'));
  await writeFile(join(dir, 'agents.ts'), OUTSIDE);
  const port = await freePort();
  start = startProcess(process.execPath, [join(REPO, 'scripts/start.ts')], {
    cwd: REPO,
    env: {
      ...process.env,
      REDIS_URL: inject('redisUrl'),
      BATON_PREFIX: uniquePrefix('start'),
      PORT: String(port),
      BATON_AGENTS: `./examples/my-agents.ts,${join(dir, 'agents.ts')}`,
      API_KEYS: '',
      ADMIN_KEYS: '',
      LOG_LEVEL: 'warn',
    },
  });
}, 60_000);

afterAll(async () => {
  await start?.stop();
  await rm(dir, { recursive: true, force: true });
});

it('the banner shows the loaded agents and uses one of them in its examples', async () => {
  await start.waitForLine(/^Press Ctrl-C to stop\./, { timeoutMs: 90_000 });
  const banner = start.lines.join('\n');
  expect(banner).toMatch(
    /Agents \(BATON_AGENTS=\.\/examples\/my-agents\.ts,.*\): echo, haiku, outside-stamper/,
  );
  expect(banner).toContain('npx baton runs create --agent echo --message');
  expect(banner).toContain('"agent":"echo"');
  expect(banner).not.toContain('assistant');
}, 120_000);

it('a killed worker is restarted alone; a run waiting across the crash completes', async () => {
  const [, url] = await start.waitForLine(/Baton is running at (\S+)/);
  const [, key] = await start.waitForLine(/API key \(tenant "local"\):\s+(\S+)/);
  const client = new BatonClient({ baseUrl: url!, apiKey: key! });
  const { runId } = await client.runs.create({
    agent: 'outside-stamper',
    input: { messages: [{ role: 'user', content: 'the letter' }] },
  });
  const waiting = await waitFor(
    async () => {
      const run = await client.runs.get(runId);
      return run.status === 'waiting' ? run : null;
    },
    60_000,
    'the run to wait for its approval',
  );
  const call = waiting.await?.calls[0]?.toolCallId;
  expect(call).toBeDefined();

  const workers = start.descendants('apps/worker/src/main.ts');
  const apis = start.descendants('apps/api/src/main.ts');
  expect(workers).toHaveLength(1);
  const from = start.lines.length;
  process.kill(workers[0]!, 'SIGKILL');
  await start.waitForLine(
    /the worker exited unexpectedly \(signal SIGKILL\); restarting it in 1 s/,
    {
      from,
    },
  );
  await start.waitForLine(/the worker is back \(\S+\); agents: echo, haiku, outside-stamper/, {
    from,
    timeoutMs: 60_000,
  });
  // Only the worker: the same API process, the same Redis and the same waiting run.
  expect(start.descendants('apps/api/src/main.ts')).toEqual(apis);
  expect(start.descendants('apps/worker/src/main.ts')).not.toContain(workers[0]);

  await client.runs.approve(runId, call!);
  const done = await waitFor(
    async () => {
      const run = await client.runs.get(runId);
      return run.status === 'done' ? run : null;
    },
    60_000,
    'the run to finish',
  );
  expect(done.termination?.kind).toBe('natural_end');
  expect(done.lastAssistantMessage).toContain('STAMPED the letter');
  expect(start.child.exitCode).toBeNull();
}, 120_000);

it('a killed API is restarted alone on the same address; the worker and Redis stay', async () => {
  const [, url] = await start.waitForLine(/Baton is running at (\S+)/);
  const [, key] = await start.waitForLine(/API key \(tenant "local"\):\s+(\S+)/);
  const workers = start.descendants('apps/worker/src/main.ts');
  const [api] = start.descendants('apps/api/src/main.ts');
  const from = start.lines.length;
  process.kill(api!, 'SIGKILL');
  await start.waitForLine(/the API exited unexpectedly \(signal SIGKILL\); restarting it/, {
    from,
  });
  await start.waitForLine(new RegExp(`the API is back at ${url}`), { from, timeoutMs: 60_000 });
  expect(start.descendants('apps/worker/src/main.ts')).toEqual(workers);
  const client = new BatonClient({ baseUrl: url!, apiKey: key! });
  expect((await client.agents.list()).map((a) => a.name)).toContain('outside-stamper');
}, 120_000);

it('the restart budget backs off, doubling, then gives up past the cap in its window', () => {
  const budget = new RestartBudget({
    maxRestarts: 3,
    windowMs: 60_000,
    baseDelayMs: 1_000,
    maxDelayMs: 3_000,
  });
  expect([0, 1, 2].map((i) => budget.crashed(i * 1_000))).toEqual([
    { action: 'restart', delayMs: 1_000, attempt: 1 },
    { action: 'restart', delayMs: 2_000, attempt: 2 },
    { action: 'restart', delayMs: 3_000, attempt: 3 },
  ]);
  expect(budget.crashed(3_000)).toEqual({ action: 'give_up', crashes: 4 });
  // Crashes older than the window no longer count.
  expect(budget.crashed(200_000)).toEqual({ action: 'restart', delayMs: 1_000, attempt: 1 });
  budget.reset();
  expect(budget.crashed(200_001)).toMatchObject({ attempt: 1 });
});
