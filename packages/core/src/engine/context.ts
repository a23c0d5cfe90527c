import type { Checkpoint } from '@baton/protocol';
import type { AgentDefinition, AgentSpec, ExecutionModeTraits } from '../agent.ts';
import { EXECUTION_MODE_TRAITS } from '../agent.ts';
import type { HookContext, Plugin } from '../plugins.ts';
import type { KeyRegistry } from '../state-keys.ts';
import { buildKeyRegistry } from '../state-keys.ts';
import type { ToolDefinition } from '../tools.ts';

/** Agent code resolved once: lookups the step functions need, no mutable state. */
export interface EngineContext {
  readonly agent: AgentSpec;
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  readonly plugins: readonly Plugin[];
  readonly registry: KeyRegistry;
}

export function buildEngineContext(agent: AgentDefinition): EngineContext {
  const tools = new Map<string, ToolDefinition>();
  for (const tool of agent.tools) {
    if (tools.has(tool.name))
      throw new Error(`agent ${agent.name} registers tool ${tool.name} twice`);
    tools.set(tool.name, tool);
  }
  return {
    agent,
    tools,
    plugins: agent.plugins ?? [],
    registry: buildKeyRegistry(agent.stateKeys ?? []),
  };
}

/** A context for data-only operations (create, decisions, cancel) where no agent code is loaded. */
export function specContext(spec: AgentSpec): EngineContext {
  return {
    agent: spec,
    tools: new Map(),
    plugins: [],
    registry: buildKeyRegistry(spec.stateKeys ?? []),
  };
}

export function traitsOf(cp: Checkpoint): ExecutionModeTraits {
  return EXECUTION_MODE_TRAITS[cp.executionMode];
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Hooks get a frozen copy: a hook that tries to mutate throws instead of corrupting the run. */
export function hookContext(cp: Checkpoint, now: number): HookContext {
  const frozen = deepFreeze(structuredClone(cp));
  return { checkpoint: frozen, state: frozen.state, now };
}
