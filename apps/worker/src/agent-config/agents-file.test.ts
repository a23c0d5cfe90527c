import { describe, expect, it } from 'vitest';
import { AgentConfigError } from './agent-config-error.ts';
import { parseAgentsFile } from './agents-file.ts';
import { createProviderModel } from './provider-models.ts';

function problem(text: string, file = 'baton.agents.yaml'): string {
  try {
    parseAgentsFile(text, file);
  } catch (error) {
    expect(error).toBeInstanceOf(AgentConfigError);
    expect((error as AgentConfigError).code).toBe('agents_file_invalid');
    return (error as Error).message;
  }
  throw new Error('the file was accepted');
}

describe('parseAgentsFile', () => {
  it('accepts a full agent and fills defaults', () => {
    const file = parseAgentsFile(
      `
providers:
  ollama: { type: openai-compatible, baseURL: "http://localhost:11434/v1" }
mcpServers:
  files: { command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", "."] }
  search: { url: "http://localhost:3000/mcp", headers: { authorization: "Bearer x" } }
agents:
  - name: researcher
    model: ollama:llama3.1
    system: Be brief.
    settings: { temperature: 0.3, maxOutputTokens: 500, stopSequences: ["END"] }
    tools:
      - { mcp: files, approval: [write_file] }
      - { mcp: search, include: [search], approval: always, timeoutMs: 10000 }
    executionMode: parallel_streaming
    replayPolicy: immediate
    stopConditions: [{ type: max_rounds, rounds: 8 }]
    modelRetry: { maxAttempts: 3, callTimeoutMs: 60000 }
`,
      'baton.agents.yaml',
    );
    expect(file.agents[0]).toMatchObject({
      name: 'researcher',
      model: 'ollama:llama3.1',
      tools: [
        { mcp: 'files', approval: ['write_file'] },
        { mcp: 'search', include: ['search'], approval: 'always', timeoutMs: 10000 },
      ],
    });
    expect(file.mcpServers['files']).toMatchObject({ command: 'npx' });
  });

  it('reads JSON by its extension', () => {
    const file = parseAgentsFile(
      JSON.stringify({ agents: [{ name: 'a', model: 'openai:gpt-4o' }] }),
      'agents.json',
    );
    expect(file.agents[0]?.tools).toEqual([]);
  });

  it.each([
    [
      'agents:\n  - name: a\n    model: gpt-4o\n',
      'baton.agents.yaml: agents[0].model: "gpt-4o" is not "provider:model-id"; use e.g. "openai:gpt-4o"',
    ],
    [
      'agents:\n  - name: a\n    model: openai:gpt-4o\n    temperature: 1\n',
      'baton.agents.yaml: agents[0]: Unrecognized key: "temperature"',
    ],
    [
      'agents:\n  - name: a\n    model: openai:gpt-4o\n    tools: [{ mcp: x, approval: sometimes }]\n',
      'baton.agents.yaml: agents[0].tools[0].approval:',
    ],
    [
      'agents:\n  - name: a\n    model: openai:gpt-4o\n  - name: a\n    model: openai:gpt-4o\n',
      'baton.agents.yaml: agents[1].name: "a" is used by an earlier agent',
    ],
    [
      'providers:\n  local: { type: openai-compatible, baseURL: localhost }\nagents:\n  - { name: a, model: "local:m" }\n',
      'baton.agents.yaml: providers.local.baseURL: is not a URL',
    ],
    ['agents: []\n', 'baton.agents.yaml: agents: lists no agent'],
    [
      'agents:\n  - { name: a, model: "openai:x", executionMode: fast }\n',
      'baton.agents.yaml: agents[0].executionMode:',
    ],
  ])('names the path and the fix for %j', (text, expected) => {
    expect(problem(text)).toContain(expected);
  });

  it('reports YAML syntax errors with their position', () => {
    expect(problem('agents:\n  - name: "a\n')).toMatch(
      /^baton\.agents\.yaml: not valid YAML \(\w+ at line \d+, column \d+\)$/,
    );
  });
});

describe('createProviderModel', () => {
  it('reads the key of a built-in provider from its usual variable', () => {
    const model = createProviderModel('openai:gpt-4o', {}, { OPENAI_API_KEY: 'sk' }, 'x');
    expect(model.modelId).toBe('gpt-4o');
    expect(() => createProviderModel('openai:gpt-4o', {}, {}, 'f: agents[2].model')).toThrow(
      'f: agents[2].model: "openai:gpt-4o" needs the environment variable OPENAI_API_KEY',
    );
  });

  it('lets a declared provider name its variable, or need none', () => {
    const providers = {
      vllm: { type: 'openai-compatible' as const, baseURL: 'http://gpu:8000/v1' },
      proxy: { type: 'anthropic' as const, baseURL: 'http://proxy/v1', apiKeyEnv: 'PROXY_KEY' },
    };
    expect(createProviderModel('vllm:qwen', providers, {}, 'x').modelId).toBe('qwen');
    expect(() => createProviderModel('proxy:claude', providers, {}, 'x')).toThrow(/PROXY_KEY/);
  });
});

describe('the documentation', () => {
  it("docs/agents-and-tools.md's agents file example is valid", async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(
      new URL('../../../../docs/agents-and-tools.md', import.meta.url),
      'utf8',
    );
    const block = /```yaml\n(providers:[\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const file = parseAgentsFile(block ?? '', 'docs/agents-and-tools.md');
    expect(file.agents.map((a) => a.name)).toEqual(['calculator']);
  });
});
