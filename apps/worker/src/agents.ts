import { type AgentDefinition, type Clock } from '@baton/core';
import { childAgents, createDemoAgents, matrixAgents } from '@baton/core/testing';
import { benchAgents } from './bench-agents.ts';

/** Agent sets a worker can be started with (BATON_AGENTS=demo,matrix,bench). */
export function loadAgents(names: readonly string[], clock: Clock): AgentDefinition[] {
  const out: AgentDefinition[] = [];
  for (const name of names) {
    if (name === 'demo') out.push(...createDemoAgents(clock));
    else if (name === 'matrix') out.push(...matrixAgents());
    else if (name === 'bench') out.push(...benchAgents(clock));
    else if (name === 'children') out.push(...childAgents());
    else throw new Error(`unknown agent set "${name}" (known: demo, matrix, bench, children)`);
  }
  return out;
}
