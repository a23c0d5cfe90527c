/**
 * The packages as another project gets them: built, packed, installed from the tarballs into a
 * scratch project outside the repo, which defines its own agent in plain JavaScript, runs it
 * with createWorker on its own ioredis client, and creates a run through @baton/runtime the way
 * the API does. Nothing in the scratch project can reach the repo's sources. The same project
 * runs again on the system's Node when it is another one (20 on the CI machine): the packages'
 * engines say 20.17+, though some of their dependencies declare 22+.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { npmInstallCached } from '@baton/testing/npm-install';
import { afterAll, expect, inject, it } from 'vitest';
import { packPackages } from '../../scripts/pack-packages.ts';
import { uniquePrefix } from '@baton/testing/redis';
import { systemNode } from '@baton/testing/system-node';

const run = promisify(execFile);
let dir: string | undefined;

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const AGENT = String.raw`
import { Redis } from 'ioredis';
import { toolResult } from '@baton/core';
import { BatonRuntime, createLogger } from '@baton/runtime';
import { createWorker } from '@baton/worker';

const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
// The project's own agent: a model in a few lines that calls the project's own tool once.
const shout = {
  name: 'shout',
  description: 'Upper-cases a text',
  inputJsonSchema: {
    type: 'object',
    properties: { text: { type: 'string' } },
    required: ['text'],
  },
  execute: async ({ text }) => toolResult.success({ loud: text.toUpperCase() }),
};
const agent = {
  name: 'scratch-shouter',
  tools: [shout],
  model: {
    id: 'scratch:shouter',
    async *stream(request) {
      const last = request.messages.at(-1);
      if (last?.role === 'tool') {
        yield { type: 'text-delta', delta: 'said: ' + JSON.stringify(last.content) };
        yield { type: 'finish', usage, finishReason: 'stop' };
        return;
      }
      yield { type: 'tool-call', id: 'c1', name: 'shout', arguments: { text: last.content } };
      yield { type: 'finish', usage, finishReason: 'tool-calls' };
    },
  },
};

const prefix = process.env.BATON_PREFIX;
const redis = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 3 });
const worker = createWorker({ agents: [agent], redis, prefix, config: { logLevel: 'silent' } });
await worker.start();

// The control plane, as the API would run it.
const runtime = new BatonRuntime({
  config: {
    REDIS_URL: process.env.REDIS_URL,
    BATON_PREFIX: prefix,
    EVENT_RETENTION_SECONDS: 600,
    THREAD_TTL_SECONDS: 600,
    JOB_RETENTION_SECONDS: 600,
    TOOL_ATTEMPTS: 1,
    BATON_DURABILITY: 'relaxed',
  },
  logger: createLogger('scratch', 'silent'),
  role: 'api',
});
// The 'api' role fails fast instead of queueing commands, so wait for the connection first.
if (!(await runtime.waitUntilReady(5_000))) throw new Error('redis not ready');
const { runId } = await runtime.service.createRun('scratch', {
  agent: 'scratch-shouter',
  input: { messages: [{ role: 'user', content: 'hello baton' }] },
});
const deadline = Date.now() + 20_000;
let finished;
while (!finished && Date.now() < deadline) {
  const events = await runtime.service.events('scratch', runId);
  finished = events.find((e) => e.type === 'run.finished');
  if (finished) {
    const text = events.filter((e) => e.type === 'text.delta').map((e) => e.delta).join('');
    console.log('RESULT ' + JSON.stringify({ status: finished.status, text }));
  } else await new Promise((r) => setTimeout(r, 100));
}
await worker.stop(1_000);
await runtime.close();
await redis.quit();
if (!finished) {
  console.error('the run did not finish');
  process.exit(1);
}
`;

// The typed client on its own: loads, and a failure is typed (no API needed to show both).
const CLIENT = String.raw`
import { BatonClient, BatonClientError } from '@baton/client';
const client = new BatonClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
try {
  await client.health();
  console.log('CLIENT answered');
} catch (error) {
  console.log('CLIENT ' + (error instanceof BatonClientError ? error.code : String(error)));
}
`;

const NODE = systemNode();

it('packed protocol, core, client, runtime and worker install and run an agent in a scratch project', async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-scratch-'));
  const tarballs = packPackages(join(dir, 'packs'));
  const project = join(dir, 'project');
  await run('mkdir', ['-p', project]);
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'scratch', private: true, type: 'module' }),
  );
  // From the npm cache npm ci filled (the registry only for what it lacks).
  await npmInstallCached(['--ignore-scripts', ...tarballs], { cwd: project });
  await writeFile(join(project, 'agent.mjs'), AGENT);
  await writeFile(join(project, 'client.mjs'), CLIENT);
  const nodes = [process.execPath];
  if (NODE && NODE.major !== Number(process.versions.node.split('.')[0])) nodes.push(NODE.path);
  for (const node of nodes) {
    const { stdout } = await run(node, ['agent.mjs'], {
      cwd: project,
      env: { ...process.env, REDIS_URL: inject('redisUrl'), BATON_PREFIX: uniquePrefix('scratch') },
      timeout: 40_000,
    });
    const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
    expect(line, `${node}: ${stdout}`).toBeDefined();
    expect(JSON.parse(line!.slice('RESULT '.length))).toEqual({
      status: 'done',
      text: 'said: {"loud":"HELLO BATON"}',
    });
    const client = await run(node, ['client.mjs'], { cwd: project, timeout: 20_000 });
    expect(client.stdout.trim(), node).toBe('CLIENT network');
  }
  // A guard, not a measure: five tsc builds, five npm packs and an npm install, about 40 s on a
  // quiet 2-core machine, took over 120 s with the machine loaded (CI, load 12).
}, 600_000);
