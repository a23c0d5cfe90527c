/**
 * Agents from an agents file, end to end with real parts: the worker's own loader reads the YAML,
 * the real AI SDK providers (@ai-sdk/openai-compatible, @ai-sdk/openai) talk HTTP to a local
 * OpenAI-compatible server, and the tools are a real MCP server (official SDK) over stdio and
 * Streamable HTTP. Retries, Retry-After, the per-call timeout and approvals all happen for real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RunEvent } from '@baton/protocol';
import { trace, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { loadAgentsFile, type LoadedAgents } from '@baton/worker/agent-config';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';
import { startOpenAiServer, type OpenAiServer } from '@baton/testing/openai-compatible-server';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MCP_SERVER = join(REPO, 'examples', 'mcp-server.ts');
const TENANT = 't-agents-file';

/** Spans the provider calls recorded through the global OpenTelemetry API (what users register). */
const spans: { name: string; attributes: Record<string, unknown>; status?: number }[] = [];
const recordingProvider = {
  getTracer: () =>
    ({
      startSpan: (name: string, options?: { attributes?: Record<string, unknown> }) => {
        const span: (typeof spans)[number] = { name, attributes: { ...options?.attributes } };
        spans.push(span);
        return {
          setAttributes: (a: Record<string, unknown>) => Object.assign(span.attributes, a),
          recordException: () => undefined,
          setStatus: (s: { code: number }) => (span.status = s.code),
          end: () => undefined,
        } as unknown as Span;
      },
    }) as unknown as Tracer,
} as TracerProvider;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-agents-file-'));
  trace.setGlobalTracerProvider(recordingProvider);
});
afterAll(async () => {
  trace.disable();
  await rm(dir, { recursive: true, force: true });
});

async function writeYaml(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

function ofType<T extends RunEvent['type']>(
  events: readonly RunEvent[],
  type: T,
): Extract<RunEvent, { type: T }>[] {
  return events.filter((e): e is Extract<RunEvent, { type: T }> => e.type === type);
}

async function startHttpMcpServer(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [MCP_SERVER, '--http', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise<string>((resolveUrl, reject) => {
    lines.on('line', (line) => {
      if (line.startsWith('MCP ')) resolveUrl(line.slice(4).trim());
    });
    child.once('exit', (code) => reject(new Error(`MCP server exited with ${code}`)));
  });
  return { url, child };
}

describe('an agent from baton.agents.yaml on @ai-sdk/openai-compatible with a stdio MCP server', () => {
  let llm: OpenAiServer;
  let loaded: LoadedAgents;
  let h: Harness;

  beforeAll(async () => {
    llm = await startOpenAiServer();
    const file = await writeYaml(
      'baton.agents.yaml',
      `
providers:
  local:
    type: openai-compatible
    baseURL: ${llm.baseURL}
    apiKeyEnv: LOCAL_LLM_KEY
mcpServers:
  notes:
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(MCP_SERVER)}]
agents:
  - name: yaml-assistant
    description: Adds and shouts
    model: local:llama3.1
    system: You add numbers and shout.
    settings: { temperature: 0.2, maxOutputTokens: 300 }
    executionMode: sequential
    tools:
      - mcp: notes
        approval: [shout]
    modelRetry: { maxAttempts: 6, baseDelayMs: 20, maxDelayMs: 5000, callTimeoutMs: 1500 }
    telemetry: { functionId: yaml-assistant, metadata: { team: ops } }
    stopConditions:
      - { type: max_rounds, rounds: 5 }
`,
    );
    loaded = await loadAgentsFile(file, { env: { LOCAL_LLM_KEY: 'sk-local' } });
    h = await startHarness(inject('redisUrl'), loaded.agents);
  });
  afterAll(async () => {
    await h?.stop();
    await loaded?.close();
    await llm?.close();
  });

  it('retries 429 (after Retry-After), 500, a dropped stream and a hang, then runs MCP tools through an approval', async () => {
    llm.push(
      { status: 429, retryAfter: '1', message: 'slow down' },
      { status: 500, message: 'upstream exploded' },
      { partialThenDrop: 'Let me think' },
      { hang: true },
      {
        toolCalls: [
          { name: 'add', args: { a: 2, b: 3 } },
          { name: 'shout', args: { text: 'hi' } },
        ],
      },
      { text: 'The sum is 5 and I said HI.' },
    );
    const svc = h.client.service;
    const created = await svc.createRun(TENANT, {
      agent: 'yaml-assistant',
      input: { messages: [{ role: 'user', content: 'add 2 and 3, then shout hi' }] },
    });
    let cp = await waitForStatus(h, created.runId, ['waiting', 'done'], 30_000);
    expect(cp.status).toBe('waiting');
    const calls = Object.values(cp.calls);
    expect(calls.find((c) => c.name === 'add')?.status).toBe('succeeded');
    const shout = calls.find((c) => c.name === 'shout');
    expect(shout?.status).toBe('suspended');
    await svc.submitDecisions(TENANT, created.runId, [{ toolCallId: shout!.id, action: 'resume' }]);
    cp = await waitForStatus(h, created.runId, ['done'], 30_000);
    expect(cp.termination).toEqual({ kind: 'natural_end' });

    const events = await h.client.store.readEvents(created.runId);
    const retries = ofType(events, 'model.retry');
    expect(retries.map((r) => [r.attempt, r.reason])).toEqual([
      [1, 'http 429'],
      [2, 'http 500'],
      [3, expect.stringMatching(/^network/)],
      [4, 'timeout'],
    ]);
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(1000);
    expect(retries[1]!.message).toContain('upstream exploded');
    // The dropped stream's text was superseded, and the committed answer does not contain it.
    expect(ofType(events, 'inference.reset').length).toBeGreaterThanOrEqual(1);
    // Retry-After: 1 was honoured for real between the first two requests.
    expect(llm.requests[1]!.at - llm.requests[0]!.at).toBeGreaterThanOrEqual(1000);

    const results = ofType(events, 'tool_call.result');
    expect(results.find((r) => r.toolName === 'add')?.outcome).toMatchObject({
      status: 'succeeded',
      output: { sum: 5 },
    });
    expect(results.find((r) => r.toolName === 'shout')?.outcome).toMatchObject({
      status: 'succeeded',
      output: 'HI',
    });
    const answers = ofType(events, 'message.assistant').map((e) => e.message.content);
    expect(answers.at(-1)).toBe('The sum is 5 and I said HI.');
    expect(answers.join(' ')).not.toContain('Let me think');

    // What the provider was sent: the key from the named variable, the settings, the MCP schemas.
    const last = llm.requests.at(-1)!;
    expect(last.authorization).toBe('Bearer sk-local');
    expect(last.body.model).toBe('llama3.1');
    expect(last.body.temperature).toBe(0.2);
    expect(last.body.messages[0]).toMatchObject({ role: 'system' });
    const add = last.body.tools?.find((t) => t.function.name === 'add');
    expect(add?.function.parameters).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
    });
    expect(llm.requests).toHaveLength(6);

    // The agent's telemetry settings reached every provider call: one span each, the failed
    // ones marked as errors.
    const traced = spans.filter((sp) => sp.attributes['baton.run.id'] === created.runId);
    expect(traced).toHaveLength(6);
    expect(traced[0]).toMatchObject({
      name: 'ai.streamText.doStream',
      attributes: {
        'ai.telemetry.functionId': 'yaml-assistant',
        'ai.telemetry.metadata.team': 'ops',
        'ai.model.id': 'llama3.1',
      },
    });
    expect(traced.map((sp) => sp.status ?? 0)).toEqual([2, 2, 2, 2, 0, 0]);
  });

  it('ends the run with the provider message on a non-retryable error', async () => {
    llm.push({ status: 400, message: 'model llama3.1 does not support tools' });
    const before = llm.requests.length;
    const created = await h.client.service.createRun(TENANT, {
      agent: 'yaml-assistant',
      input: { messages: [{ role: 'user', content: 'hello' }] },
    });
    const cp = await waitForStatus(h, created.runId, ['done'], 20_000);
    expect(cp.termination?.kind).toBe('error');
    expect(cp.termination?.kind === 'error' && cp.termination.message).toContain(
      'model llama3.1 does not support tools',
    );
    expect(llm.requests.length - before).toBe(1);
    const events = await h.client.store.readEvents(created.runId);
    expect(ofType(events, 'model.retry')).toHaveLength(0);
  });

  it('a cancel interrupts the wait for a long Retry-After', async () => {
    llm.push({ status: 429, retryAfter: '4', message: 'come back later' });
    const svc = h.client.service;
    const created = await svc.createRun(TENANT, {
      agent: 'yaml-assistant',
      input: { messages: [{ role: 'user', content: 'hello' }] },
    });
    await waitFor(
      async () =>
        (await h.client.store.readEvents(created.runId)).some((e) => e.type === 'model.retry'),
      10_000,
      'the model.retry event',
    );
    const requests = llm.requests.length;
    await svc.cancel(TENANT, created.runId);
    const cp = await waitForStatus(h, created.runId, ['done'], 10_000);
    expect(cp.termination).toEqual({ kind: 'cancelled' });
    expect(llm.requests.length).toBe(requests);
    // It ended inside the 4 s the provider asked for: the wait was interrupted, not sat out.
    const events = await h.client.store.readEvents(created.runId);
    const retry = ofType(events, 'model.retry')[0]!;
    const finished = ofType(events, 'run.finished')[0]!;
    expect(retry.delayMs).toBe(4000);
    expect(finished.at - retry.at).toBeLessThan(retry.delayMs);
  });

  it('rejects arguments that break the MCP tool JSON Schema before calling the server', async () => {
    llm.push(
      { toolCalls: [{ name: 'add', args: { a: 'two', b: 3 } }] },
      { text: 'I could not add that.' },
    );
    const created = await h.client.service.createRun(TENANT, {
      agent: 'yaml-assistant',
      input: { messages: [{ role: 'user', content: 'add two and 3' }] },
    });
    await waitForStatus(h, created.runId, ['done'], 20_000);
    const events = await h.client.store.readEvents(created.runId);
    const result = ofType(events, 'tool_call.result').find((r) => r.toolName === 'add');
    expect(result?.outcome.status).toBe('failed');
    expect(result?.outcome.error).toContain('invalid arguments');
  });
});

describe('an agent from a YAML file on @ai-sdk/openai with a Streamable HTTP MCP server', () => {
  let llm: OpenAiServer;
  let mcp: { url: string; child: ChildProcess };
  let loaded: LoadedAgents;
  let h: Harness;

  beforeAll(async () => {
    llm = await startOpenAiServer();
    mcp = await startHttpMcpServer();
    const file = await writeYaml(
      'parallel.agents.yml',
      `
providers:
  gateway: { type: openai, baseURL: "${llm.baseURL}", apiKeyEnv: GATEWAY_KEY }
mcpServers:
  notes: { url: "${mcp.url}" }
agents:
  - name: yaml-parallel
    model: gateway:gpt-4o-mini
    executionMode: parallel_batch_approval
    tools:
      - { mcp: notes, approval: always }
    modelRetry: { baseDelayMs: 20 }
`,
    );
    loaded = await loadAgentsFile(file, { env: { GATEWAY_KEY: 'sk-gateway' } });
    h = await startHarness(inject('redisUrl'), loaded.agents);
  });
  afterAll(async () => {
    await h?.stop();
    await loaded?.close();
    mcp?.child.kill();
    await llm?.close();
  });

  it('retries a 503, batches three approvals, and maps MCP errors to error results', async () => {
    llm.push(
      { status: 503, message: 'overloaded' },
      {
        toolCalls: [
          { name: 'add', args: { a: 40, b: 2 } },
          { name: 'shout', args: { text: 'done' } },
          { name: 'divide', args: { a: 1, b: 0 } },
        ],
      },
      { text: '42, DONE, and no division by zero.' },
    );
    const svc = h.client.service;
    const created = await svc.createRun(TENANT, {
      agent: 'yaml-parallel',
      input: { messages: [{ role: 'user', content: 'go' }] },
    });
    let cp = await waitForStatus(h, created.runId, ['waiting', 'done'], 20_000);
    const suspended = Object.values(cp.calls).filter((c) => c.status === 'suspended');
    expect(suspended.map((c) => c.name).sort()).toEqual(['add', 'divide', 'shout']);
    await svc.submitDecisions(
      TENANT,
      created.runId,
      suspended.map((c) => ({ toolCallId: c.id, action: 'resume' as const })),
    );
    cp = await waitForStatus(h, created.runId, ['done'], 20_000);
    expect(cp.termination).toEqual({ kind: 'natural_end' });

    const events = await h.client.store.readEvents(created.runId);
    expect(ofType(events, 'model.retry').map((r) => r.reason)).toEqual(['http 503']);
    const outcome = (name: string) =>
      ofType(events, 'tool_call.result').find((r) => r.toolName === name)?.outcome;
    expect(outcome('add')).toMatchObject({ status: 'succeeded', output: { sum: 42 } });
    expect(outcome('shout')).toMatchObject({ status: 'succeeded', output: 'DONE' });
    expect(outcome('divide')).toEqual({ status: 'failed', error: 'cannot divide by zero' });
    expect(llm.requests.at(-1)!.authorization).toBe('Bearer sk-gateway');
    expect(llm.requests.at(-1)!.body.model).toBe('gpt-4o-mini');
  });
});
