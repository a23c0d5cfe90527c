import { z } from 'zod';
import type { AgentDefinition } from '../agent.ts';
import { ManualClock } from '../clock.ts';
import type { ModelPort } from '../model.ts';
import { ScriptedModel, type Script } from '../model/scripted-model.ts';
import { InProcessRunner } from '../runner/in-process-runner.ts';
import { defineTool, toolResult, type ToolDefinition } from '../tools.ts';
import { deferred, type Deferred } from '../runner/deferred.ts';

/** Tools whose completion the test controls, so interleavings are exact and timer-free. */
export class ToolGates {
  private readonly gates = new Map<string, Deferred<void>>();
  readonly started: string[] = [];
  readonly executions: {
    name: string;
    args: unknown;
    attempt: number;
    key: string;
    resume?: unknown;
  }[] = [];

  gate(name: string): Deferred<void> {
    let d = this.gates.get(name);
    if (!d) {
      d = deferred();
      this.gates.set(name, d);
    }
    return d;
  }

  release(name: string): void {
    this.gate(name).resolve();
  }
}

export function echoTool(name = 'echo', opts: Partial<ToolDefinition> = {}): ToolDefinition {
  const base = defineTool({
    name,
    description: `echoes its input (${name})`,
    inputSchema: z.looseObject({ value: z.string().optional() }),
    execute: async (args) => toolResult.success({ echoed: args.value ?? null }),
  });
  return { ...(base as ToolDefinition), ...opts };
}

/** A tool that suspends for a human approval, then succeeds with `{ tool: name }`. */
export function approvalTool(name: string): ToolDefinition {
  return defineTool({
    name,
    description: `${name} needs approval`,
    inputSchema: z.object({}),
    approval: {},
    execute: async () => toolResult.success({ tool: name }),
  });
}

export function agentWith(
  script: Script | ModelPort,
  tools: ToolDefinition[],
  extra: Partial<AgentDefinition> = {},
): AgentDefinition {
  const model =
    typeof script === 'function' || Array.isArray(script)
      ? new ScriptedModel(script as Script)
      : (script as ModelPort);
  return { name: extra.name ?? 'test-agent', model, tools, ...extra };
}

export function runnerFor(...agents: AgentDefinition[]): {
  runner: InProcessRunner;
  clock: ManualClock;
} {
  const clock = new ManualClock(1_000);
  return { runner: new InProcessRunner({ agents, clock }), clock };
}

/** Lets every pending microtask and promise chain settle. */
export async function flush(rounds = 50): Promise<void> {
  for (let i = 0; i < rounds; i += 1) await Promise.resolve();
}
