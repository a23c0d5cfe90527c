/**
 * The shipped worker process (`node apps/worker/src/main.ts`) with BATON_AGENTS naming the
 * user's own module or agents file: a module written here runs end to end, and every broken
 * configuration stops the worker at start-up with exit 1 and one line that says what to fix.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonRuntime, systemClock } from '@baton/runtime';
import { loadAgentSources } from '@baton/worker/agent-config';
import {
  silentLogger,
  startHarness,
  testConfig,
  testPrefix,
  waitFor,
  waitForStatus,
} from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';
import { startOpenAiServer } from '@baton/testing/openai-compatible-server';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-agent-sources-'));
});
afterAll(async () => {
  await stopAllWorkerProcesses();
  await rm(dir, { recursive: true, force: true });
});

// No import at all: an agent is plain data plus a model and tools, and a JSON Schema tool needs
// no zod. The model answers the tool result, so the run proves both were used.
const MODULE = `
const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const model = {
  id: 'inline:greeter',
  async *stream(request: { step: number; messages: { role: string; content: unknown }[] }) {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') {
      yield { type: 'text-delta', delta: 'The tool said: ' + String(last.content) };
      yield { type: 'finish', usage, finishReason: 'stop' };
      return;
    }
    yield { type: 'tool-call', id: 'greet-' + request.step, name: 'greet', arguments: { name: 'Ada' } };
    yield { type: 'finish', usage, finishReason: 'tool-calls' };
  },
};
export const notAnAgent = 42;
export const greeter = {
  name: 'module-greeter',
  description: 'Greets through a JSON Schema tool',
  model,
  tools: [
    {
      name: 'greet',
      description: 'Greets someone',
      inputJsonSchema: {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name'],
        additionalProperties: false,
      },
      execute: async (args: { name: string }) => ({ kind: 'success', output: 'Hello, ' + args.name }),
    },
  ],
};
`;

describe('BATON_AGENTS=<module path>', () => {
  it('runs an agent exported by a .ts file outside the repository', async () => {
    const file = join(dir, 'my-agents.ts');
    await writeFile(file, MODULE);
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    await spawnWorker({ redisUrl, prefix, agents: `${file}:greeter`, probes: false });
    const client = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
    try {
      const created = await client.service.createRun('t-module', {
        agent: 'module-greeter',
        input: { messages: [{ role: 'user', content: 'greet Ada' }] },
      });
      const cp = await waitFor(
        async () => {
          const stored = await client.store.load(created.runId);
          return stored?.checkpoint.status === 'done' ? stored.checkpoint : null;
        },
        20_000,
        'the module agent run to finish',
      );
      expect(cp.termination).toEqual({ kind: 'natural_end' });
      const last = cp.messages.at(-1);
      expect(last).toMatchObject({ role: 'assistant' });
      expect(last?.role === 'assistant' ? last.content : '').toContain('Hello, Ada');
    } finally {
      await client.close();
    }
  });
});

describe('BATON_AGENTS=<agents file>', () => {
  it('the shipped worker runs a YAML agent with a stdio MCP server through an approval, and stops cleanly', async () => {
    const llm = await startOpenAiServer([
      { status: 429, retryAfter: '1' },
      { toolCalls: [{ name: 'shout', args: { text: 'ship it' } }] },
      { text: 'Shouted.' },
    ]);
    try {
      const file = join(dir, 'process.agents.yaml');
      await writeFile(
        file,
        [
          'providers:',
          `  local: { type: openai-compatible, baseURL: "${llm.baseURL}", apiKeyEnv: LOCAL_KEY }`,
          'mcpServers:',
          `  notes: { command: ${JSON.stringify(process.execPath)}, args: [examples/mcp-server.ts] }`,
          'agents:',
          '  - name: process-yaml',
          '    model: local:qwen2.5',
          '    tools: [{ mcp: notes, approval: always }]',
          '    modelRetry: { baseDelayMs: 10 }',
        ].join('\n'),
      );
      const redisUrl = inject('redisUrl');
      const prefix = testPrefix();
      const worker = await spawnWorker({
        redisUrl,
        prefix,
        agents: file,
        probes: false,
        env: { LOCAL_KEY: 'sk-process' },
      });
      const client = new BatonRuntime({
        config: testConfig(redisUrl, prefix),
        logger: silentLogger,
      });
      try {
        const created = await client.service.createRun('t-process', {
          agent: 'process-yaml',
          input: { messages: [{ role: 'user', content: 'shout ship it' }] },
        });
        const waiting = await waitFor(
          async () => {
            const cp = (await client.store.load(created.runId))?.checkpoint;
            return cp?.status === 'waiting' || cp?.status === 'done' ? cp : null;
          },
          20_000,
          'the approval',
        );
        const call = Object.values(waiting.calls).find((c) => c.status === 'suspended');
        expect(call?.name).toBe('shout');
        await client.service.submitDecisions('t-process', created.runId, [
          { toolCallId: call!.id, action: 'resume' },
        ]);
        const cp = await waitFor(
          async () => {
            const loaded = (await client.store.load(created.runId))?.checkpoint;
            return loaded?.status === 'done' ? loaded : null;
          },
          20_000,
          'the run to finish',
        );
        expect(cp.termination).toEqual({ kind: 'natural_end' });
        const tool = cp.messages.find((m) => m.role === 'tool');
        expect(tool?.role === 'tool' ? tool.content : null).toBe('SHIP IT');
        const events = await client.store.readEvents(created.runId);
        expect(events.filter((e) => e.type === 'model.retry')).toHaveLength(1);
        expect(llm.requests[1]!.at - llm.requests[0]!.at).toBeGreaterThanOrEqual(1000);
        expect(llm.requests[0]!.authorization).toBe('Bearer sk-process');
      } finally {
        await client.close();
      }
      // SIGTERM: the worker stops, closes its MCP connection, and exits 0.
      worker.kill('SIGTERM');
      expect((await worker.waitForExit(10_000)).code).toBe(0);
    } finally {
      await llm.close();
    }
  });
});

/** Starts the worker and returns its exit code and stderr (it must not get as far as Redis). */
async function startFailing(
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['apps/worker/src/main.ts'], {
    cwd: REPO,
    env: {
      PATH: process.env['PATH'] ?? '',
      // Nothing may be reached: a worker that got past loading would fail differently.
      REDIS_URL: 'redis://127.0.0.1:1',
      LOG_LEVEL: 'silent',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await new Promise<number | null>((done) => child.on('exit', (c) => done(c)));
  return { code, stderr };
}

describe('start-up errors in settings', () => {
  it('an invalid variable is one line naming it and what it accepts, not the raw validation error', async () => {
    const { code, stderr } = await startFailing({
      WORKER_CONCURRENCY: 'many',
      BATON_AGENTS: 'demo',
    });
    expect(code).toBe(1);
    const lines = stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^baton-worker: invalid configuration: WORKER_CONCURRENCY="many": .*\(accepts a whole number from 1 to 1000 \(default \d+\)\); fix the variable or unset it to use its default \(see docs\/configuration\.md\)$/,
    );
  });

  it('a Redis URL is named, its password never printed', async () => {
    const { code, stderr } = await startFailing({
      REDIS_URL: 'http://user:hunter2@redis.example:6379',
      BATON_AGENTS: 'demo',
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^baton-worker: invalid configuration: REDIS_URL: /);
    expect(stderr).not.toContain('hunter2');
  });
});

describe('start-up errors in agent sources', () => {
  const cases: {
    name: string;
    file: string;
    text: string;
    env?: Record<string, string>;
    line: RegExp;
  }[] = [
    {
      name: 'YAML that does not parse',
      file: 'broken.yaml',
      text: 'agents: [\n  - name: x\n',
      line: /^baton-worker: .*broken\.yaml: not valid YAML \(.+ at line \d+, column \d+\)$/,
    },
    {
      name: 'a model without a provider',
      file: 'no-provider.yaml',
      text: 'agents:\n  - name: a\n    model: gpt-4o\n',
      line: /^baton-worker: .*no-provider\.yaml: agents\[0\]\.model: "gpt-4o" is not "provider:model-id"; use e\.g\. "openai:gpt-4o"/,
    },
    {
      name: 'an unknown provider',
      file: 'unknown.yml',
      text: 'agents:\n  - name: a\n    model: mistral:large\n',
      line: /^baton-worker: .*unknown\.yml: agents\[0\]\.model: unknown provider "mistral"; use one of openai, anthropic, google, or declare it under providers:/,
    },
    {
      name: 'a missing provider key',
      file: 'needs-key.json',
      text: JSON.stringify({ agents: [{ name: 'a', model: 'anthropic:claude-sonnet-4-5' }] }),
      line: /^baton-worker: .*needs-key\.json: agents\[0\]\.model: "anthropic:claude-sonnet-4-5" needs the environment variable ANTHROPIC_API_KEY; set it/,
    },
    {
      name: 'a tool source naming no MCP server',
      file: 'no-server.yaml',
      text: 'agents:\n  - name: a\n    model: openai:gpt-4o\n    tools: [{ mcp: files }]\n',
      env: { OPENAI_API_KEY: 'sk-unused' },
      line: /^baton-worker: .*no-server\.yaml: agents\[0\]\.tools\[0\]\.mcp: no MCP server named "files"; declare it under mcpServers:$/,
    },
    {
      name: 'an MCP server that cannot start',
      file: 'dead-mcp.yaml',
      text:
        'mcpServers:\n  files: { command: baton-no-such-command }\n' +
        'agents:\n  - name: a\n    model: openai:gpt-4o\n    tools: [{ mcp: files }]\n',
      env: { OPENAI_API_KEY: 'sk-unused' },
      line: /^baton-worker: .*dead-mcp\.yaml: mcpServers\.files: cannot connect to baton-no-such-command: .*ENOENT/,
    },
    {
      name: 'a module that exports no agent',
      file: 'empty-agents.ts',
      text: 'export const answer = 42;\n',
      line: /^baton-worker: .*empty-agents\.ts: exports no agent; export an AgentDefinition/,
    },
  ];

  for (const c of cases)
    it(`stops on ${c.name} with one line and exit 1`, async () => {
      const file = join(dir, c.file);
      await writeFile(file, c.text);
      const { code, stderr } = await startFailing({ BATON_AGENTS: file, ...c.env });
      expect(code).toBe(1);
      const lines = stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(c.line);
    });

  it('reads BATON_AGENTS_FILE too', async () => {
    const file = join(dir, 'via-file-var.yaml');
    await writeFile(file, 'agents:\n  - name: a\n    model: google:gemini-2.5-flash\n');
    const { code, stderr } = await startFailing({ BATON_AGENTS_FILE: file });
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(/needs the environment variable GOOGLE_GENERATIVE_AI_API_KEY/);
  });
});

describe('the examples', () => {
  it('examples/my-agents.ts and examples/baton.agents.yaml load, and the echo agent runs', async () => {
    const loaded = await loadAgentSources(systemClock, {
      cwd: REPO,
      env: {
        BATON_AGENTS: './examples/my-agents.ts,./examples/baton.agents.yaml',
        OPENAI_API_KEY: 'sk-not-used',
      },
    });
    try {
      expect(loaded.agents.map((a) => a.name).sort()).toEqual(['calculator', 'echo', 'haiku']);
      const calculator = loaded.agents.find((a) => a.name === 'calculator');
      // The example MCP server was started and listed its tools; shout is the gated one.
      expect(calculator?.tools.map((t) => [t.name, t.approval !== undefined])).toEqual([
        ['add', false],
        ['shout', true],
        ['divide', false],
      ]);
      const h = await startHarness(
        inject('redisUrl'),
        loaded.agents.filter((a) => a.name === 'echo'),
      );
      try {
        const created = await h.client.service.createRun('t-examples', {
          agent: 'echo',
          input: { messages: [{ role: 'user', content: 'one two three' }] },
        });
        const cp = await waitForStatus(h, created.runId, ['done']);
        const last = cp.messages.at(-1);
        expect(last?.role === 'assistant' ? last.content : '').toBe('Counted: {"words":3}');
      } finally {
        await h.stop();
      }
    } finally {
      await loaded.close();
    }
  });
});
