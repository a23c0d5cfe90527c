import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeTool } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { AgentConfigError } from './agent-config-error.ts';
import { loadAgentsFile, parseAgentsFile } from './agents-file.ts';

const FILE = `
providers:
  local: { type: openai-compatible, baseURL: "http://127.0.0.1:9/v1" }
agents:
  - name: lead
    model: local:any
    agentTools:
      - { agent: researcher, description: Finds things out }
      - { agent: writer, name: draft, description: Writes it up, thread: new, approval: true }
  - name: researcher
    model: local:any
`;

async function load(text: string): Promise<Awaited<ReturnType<typeof loadAgentsFile>>> {
  const dir = await mkdtemp(join(tmpdir(), 'baton-agent-tools-'));
  try {
    const file = join(dir, 'baton.agents.yaml');
    await writeFile(file, text);
    return await loadAgentsFile(file, { env: {} });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('agentTools in an agents file', () => {
  it('become agent tools the model sees as ordinary tools with a message argument', async () => {
    const loaded = await load(FILE);
    const lead = loaded.agents.find((a) => a.name === 'lead');
    const [research, draft] = lead?.tools ?? [];
    expect(research?.agent).toEqual({ agent: 'researcher' });
    expect(draft?.agent).toEqual({ agent: 'writer', thread: 'new' });
    expect(draft?.approval).toBeDefined();
    expect(describeTool(research!)).toMatchObject({
      name: 'researcher',
      childAgent: 'researcher',
      inputSchema: { properties: { message: { type: 'string' } }, required: ['message'] },
    });
    expect(describeTool(draft!).name).toBe('draft');
    await loaded.close();
  });

  it('refuse a name another tool of the agent has, and unknown fields', async () => {
    await expect(
      load(
        FILE.replace(
          'name: draft, description: Writes it up',
          'name: researcher, description: Writes it up',
        ),
      ),
    ).rejects.toThrow(/agentTools\[1\]: tool "researcher" is already defined/);
    try {
      parseAgentsFile(
        'agents:\n  - { name: a, model: openai:gpt-4o, agentTools: [{ agent: b, description: x, mode: y }] }',
        'a.yaml',
      );
      throw new Error('accepted');
    } catch (error) {
      expect(error).toBeInstanceOf(AgentConfigError);
      expect((error as Error).message).toMatch(/agents\[0\]\.agentTools\[0\]/);
    }
  });
});

describe('the documentation', () => {
  it("docs/agents-and-tools.md's agentTools example is valid", async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(
      new URL('../../../../docs/agents-and-tools.md', import.meta.url),
      'utf8',
    );
    const block = /```yaml\n(agents:\n {2}- name: lead[\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const file = parseAgentsFile(block ?? '', 'docs/agents-and-tools.md');
    expect(file.agents[0]?.agentTools.map((t) => t.name ?? t.agent)).toEqual([
      'researcher',
      'draft',
    ]);
  });
});
