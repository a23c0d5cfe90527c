import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import { agentVersionOf, versioningOf } from './agent-version-of.ts';

const tool = (name: string, schema: z.ZodObject = z.object({ id: z.string() })) =>
  defineTool({
    name,
    description: `the ${name} tool`,
    inputSchema: schema,
    execute: async () => toolResult.success({}),
  });

const base: AgentDefinition = {
  name: 'a',
  systemPrompt: 'be brief',
  model: new ScriptedModel([{ text: 'x' }], { id: 'm1' }),
  tools: [tool('lookup'), tool('ship')],
};

describe('agentVersionOf', () => {
  it('is the explicit version when given', () => {
    expect(agentVersionOf({ ...base, version: '2026.11.28-1' })).toBe('2026.11.28-1');
  });

  it('refuses a version that cannot be one, naming the agent', () => {
    expect(() => agentVersionOf({ ...base, version: 'v1:beta' })).toThrow(/agent a: version/);
  });

  it('derives a stable hash that ignores tool order and descriptions', () => {
    const derived = agentVersionOf(base);
    expect(derived).toMatch(/^h-[0-9a-f]{12}$/);
    expect(agentVersionOf({ ...base, tools: [...base.tools].reverse() })).toBe(derived);
    expect(
      agentVersionOf({ ...base, description: 'other', tools: [tool('ship'), tool('lookup')] }),
    ).toBe(derived);
  });

  it('changes with the prompt, the model, a tool name or schema, and the execution mode', () => {
    const derived = agentVersionOf(base);
    const variants: AgentDefinition[] = [
      { ...base, systemPrompt: 'be verbose' },
      { ...base, model: new ScriptedModel([{ text: 'x' }], { id: 'm2' }) },
      { ...base, tools: [tool('find'), tool('ship')] },
      { ...base, tools: [tool('lookup', z.object({ id: z.number() })), tool('ship')] },
      { ...base, executionMode: 'parallel_streaming' },
    ];
    const versions = variants.map(agentVersionOf);
    expect(new Set([derived, ...versions]).size).toBe(variants.length + 1);
  });

  it("versioning is 'pinned' unless the agent says 'auto-upgrade'", () => {
    expect(versioningOf(base)).toBe('pinned');
    expect(versioningOf({ ...base, versioning: 'auto-upgrade' })).toBe('auto-upgrade');
  });
});
