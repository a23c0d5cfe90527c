import { type AgentDefinition, type Clock } from '@baton/core';
import { childAgents, createDemoAgents, matrixAgents } from '@baton/core/testing';

/** Agent sets a worker can be started with (BATON_AGENTS=demo,matrix,children). */
export function loadAgents(names: readonly string[], clock: Clock): AgentDefinition[] {
  const out: AgentDefinition[] = [];
  for (const name of names) {
    if (name === 'demo') out.push(...createDemoAgents(clock));
    else if (name === 'matrix') out.push(...matrixAgents());
    else if (name === 'children') out.push(...childAgents());
    else throw new Error(`unknown agent set "${name}" (known: demo, matrix, children)`);
  }
  return out;
}
