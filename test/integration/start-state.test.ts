/**
 * `npm start` keeps its state (issue 37 item 4): the same local API key every start (written
 * once to .baton/local.json, shown in the banner), the private Redis' data between starts (a run
 * waiting for a decision before a restart is decided after it), `--fresh` an empty Redis with
 * the same key; and a worker that crash-loops leaves the API and Redis up, the banner saying
 * the worker is down and /readyz too (still 200: workers are not the API's readiness).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BatonClient } from '@baton/client';
import { freePort } from '@baton/testing/redis';
import { startProcess, type StartProcess } from '@baton/testing/start-process';
import { waitFor } from '@baton/testing/worker-harness';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// `stamper` asks for approval; the module exits its worker (after READY) while `crash` exists.
const AGENTS = (marker: string) => `
import { existsSync } from 'node:fs';
import { defineTool, toolResult, type AgentDefinition, type ModelPort } from '@baton/core';
import { z } from 'zod';

setInterval(() => { if (existsSync(${JSON.stringify(marker)})) process.exit(3); }, 100).unref();

const stamp = defineTool({
  name: 'stamp',
  description: 'Stamps a text, after approval',
  inputSchema: z.object({ text: z.string() }),
  approval: { message: 'Stamp it?' },
  execute: async ({ text }) => toolResult.success({ stamped: 'STAMPED ' + text }),
});
const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
const model: ModelPort = {
  id: 'state:stamper',
  async *stream(request) {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') {
      yield { type: 'text-delta', delta: 'tool said ' + JSON.stringify(last.content) };
      yield { type: 'finish', usage, finishReason: 'stop' };
      return;
    }
    yield { type: 'tool-call', id: 'c' + request.step, name: 'stamp', arguments: { text: 'it' } };
    yield { type: 'finish', usage, finishReason: 'tool-calls' };
  },
};
export const stamper: AgentDefinition = { name: 'stamper', model, tools: [stamp] };
`;

let dir: string;
let marker: string;
let port: number;
let current: StartProcess | undefined;

function start(args: string[] = []): StartProcess {
  current = startProcess(process.execPath, [join(REPO, 'scripts/start.ts'), ...args], {
    cwd: dir,
    env: {
      // No Redis given: the private redis-server, whose data this test is about.
      ...Object.fromEntries(
        Object.entries(process.env).filter(([k]) => k !== 'REDIS_URL' && k !== 'BATON_PREFIX'),
      ),
      PORT: String(port),
      BATON_AGENTS: join(dir, 'agents.ts'),
      API_KEYS: '',
      ADMIN_KEYS: '',
      LOG_LEVEL: 'warn',
      // A crashed worker drops out of /readyz's count within seconds.
      AGENT_HEARTBEAT_TTL_MS: '1500',
    },
  });
  return current;
}

async function banner(s: StartProcess): Promise<{ url: string; key: string }> {
  await s.waitForLine(/^Press Ctrl-C to stop\./, { timeoutMs: 90_000 });
  const [, url] = await s.waitForLine(/Baton is running at (\S+)/);
  const [, key] = await s.waitForLine(/API key \(tenant "local"\):\s+(\S+)/);
  return { url: url!, key: key! };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-start-state-'));
  marker = join(dir, 'crash');
  await writeFile(join(dir, 'agents.ts'), AGENTS(marker));
  port = await freePort();
});

afterAll(async () => {
  await current?.stop();
  await rm(dir, { recursive: true, force: true });
});

let key: string;
let waitingRun: string;

it('the key is the same on the next start and a waiting run survives the restart', async () => {
  const first = start();
  const one = await banner(first);
  key = one.key;
  expect(first.lines.join('\n')).toContain('kept in .baton/local.json');
  expect(JSON.parse(await readFile(join(dir, '.baton', 'local.json'), 'utf8'))).toMatchObject({
    apiKey: key,
  });
  const client = new BatonClient({ baseUrl: one.url, apiKey: key });
  const { runId } = await client.runs.create({
    agent: 'stamper',
    input: { messages: [{ role: 'user', content: 'keep me' }] },
  });
  waitingRun = runId;
  await waitFor(
    async () => ((await client.runs.get(runId)).status === 'waiting' ? true : null),
    60_000,
    'the run to wait for its approval',
  );
  await first.stop();
  // The data folder stays; the Redis is gone with the start.
  expect(existsSync(join(dir, '.baton', 'redis'))).toBe(true);

  const second = start();
  const two = await banner(second);
  expect(two.key).toBe(key);
  const again = new BatonClient({ baseUrl: two.url, apiKey: two.key });
  const run = await again.runs.get(waitingRun);
  expect(run.status).toBe('waiting');
  await again.runs.approve(waitingRun, run.await!.calls[0]!.toolCallId);
  const done = await waitFor(
    async () => {
      const r = await again.runs.get(waitingRun);
      return r.status === 'done' ? r : null;
    },
    60_000,
    'the run to finish after the restart',
  );
  expect(done.lastAssistantMessage).toContain('STAMPED it');
}, 240_000);

it('a crash-looping worker leaves the API and Redis up; the banner and /readyz say it is down', async () => {
  const s = current!;
  const { url } = await banner(s);
  const ready = async () =>
    (await fetch(`${url}/readyz`)).json() as Promise<{ workers?: { state: string } }>;
  expect((await ready()).workers).toMatchObject({ state: 'up' });
  const from = s.lines.length;
  await writeFile(marker, '');
  await s.waitForLine(/the worker exited unexpectedly/, { from });
  await s.waitForLine(/the worker is DOWN: .*6th crash/, { from, timeoutMs: 120_000 });
  // Everything else stays: the start, its API and its Redis (the run of the last test is there).
  expect(s.child.exitCode).toBeNull();
  const client = new BatonClient({ baseUrl: url, apiKey: key });
  expect((await client.runs.get(waitingRun)).status).toBe('done');
  const res = await fetch(`${url}/readyz`);
  expect(res.status).toBe(200);
  await waitFor(
    async () => ((await ready()).workers?.state === 'down' ? true : null),
    30_000,
    '/readyz to say the worker is down',
  );
  // Fixed: the next start of the worker stays up, and the start says so.
  await rm(marker);
  await s.waitForLine(/the worker is UP again/, { from, timeoutMs: 90_000 });
  await waitFor(
    async () => ((await ready()).workers?.state === 'up' ? true : null),
    30_000,
    '/readyz to say the worker is up',
  );
}, 240_000);

it('--fresh starts with an empty Redis and the same key', async () => {
  await current!.stop();
  const s = start(['--fresh']);
  const { url, key: freshKey } = await banner(s);
  expect(freshKey).toBe(key);
  const client = new BatonClient({ baseUrl: url, apiKey: freshKey });
  await expect(client.runs.get(waitingRun)).rejects.toMatchObject({ code: 'run_not_found' });
}, 120_000);
