import type { ExecutionMode, JsonObject } from '@baton/protocol';
import { z } from 'zod';
import type { AgentDefinition } from '../agent.ts';
import type { InferenceRequest, ModelPort } from '../model.ts';
import { ScriptedModel, type ScriptedTurn } from '../model/scripted-model.ts';
import { agentTool, defineTool, toolResult } from '../tools.ts';

/**
 * Agents for the child-run (agent-as-tool) tests. A `tree-<mode>` parent reads its instruction
 * from the user message — "call answer,fail" calls those tools in one round — and then answers
 * with the results it got, so a test can read exactly what each child delivered.
 */

function lastUser(request: InferenceRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i -= 1) {
    const m = request.messages[i];
    if (m?.role === 'user') return m.content;
  }
  return '';
}

/** The tool results of the round before this step, as the model sees them. */
function toolResults(request: InferenceRequest): string[] {
  const out: string[] = [];
  for (let i = request.messages.length - 1; i >= 0; i -= 1) {
    const m = request.messages[i];
    if (m?.role !== 'tool') break;
    out.unshift(`${m.toolName}=${m.isError ? 'error:' : ''}${JSON.stringify(m.content)}`);
  }
  return out;
}

/** A parent: round 1 calls the tools named after "call ", round 2 reports their results. */
function treeScript(request: InferenceRequest): ScriptedTurn {
  if (request.step === 1) {
    const match = /^call ([\w,-]+)/.exec(lastUser(request));
    if (!match?.[1]) return { text: 'nothing to call' };
    return {
      text: 'delegating',
      toolCalls: match[1].split(',').map((name, i) => {
        const args: JsonObject =
          name === 'echo'
            ? { value: `v${String(i)}` }
            : { message: name === 'self' ? 'call self' : `task ${String(i)}` };
        return { name, arguments: args };
      }),
    };
  }
  return { text: `results: ${toolResults(request).join(' | ')}` };
}

const echo = defineTool({
  name: 'echo',
  description: 'echoes its input',
  inputSchema: z.looseObject({ value: z.string().optional() }),
  execute: async (args) => toolResult.success({ echoed: args.value ?? null }),
});

const approveMe = defineTool({
  name: 'approve_me',
  description: 'needs a human decision',
  inputSchema: z.looseObject({}),
  approval: { message: 'Let the child go on?' },
  execute: async () => toolResult.success('approved'),
});

/** A model that fails every call with an error no retry fixes. */
const brokenModel: ModelPort = {
  id: 'broken',
  // eslint-disable-next-line require-yield
  async *stream() {
    throw new Error('the child model is broken');
  },
};

function treeTools(self: string): AgentDefinition['tools'] {
  return [
    agentTool('child-answer', { name: 'answer', description: 'answers a question' }),
    agentTool('child-answer', {
      name: 'answer_new',
      description: 'answers in a thread of its own',
      thread: 'new',
    }),
    agentTool('child-fail', { name: 'fail', description: 'always fails' }),
    agentTool('child-approval', { name: 'approval', description: 'asks a human first' }),
    agentTool('tree-middle', { name: 'middle', description: 'asks its own child' }),
    agentTool('no-such-agent', { name: 'ghost', description: 'an agent nobody runs' }),
    agentTool(self, { name: 'self', description: 'calls itself (depth limit)' }),
    echo,
  ];
}

const MODES: Record<string, ExecutionMode> = {
  sequential: 'sequential',
  batch: 'parallel_batch_approval',
  stream: 'parallel_streaming',
};

export function childAgents(): AgentDefinition[] {
  const parents = Object.entries(MODES).map(([suffix, mode]): AgentDefinition => ({
    name: `tree-${suffix}`,
    model: new ScriptedModel(treeScript),
    tools: treeTools(`tree-${suffix}`),
    executionMode: mode,
  }));
  return [
    ...parents,
    {
      name: 'child-answer',
      model: new ScriptedModel((request) => ({ text: `answered "${lastUser(request)}"` })),
      tools: [],
    },
    { name: 'child-fail', model: brokenModel, tools: [] },
    {
      name: 'child-approval',
      model: new ScriptedModel([
        { text: 'asking', toolCalls: [{ name: 'approve_me', arguments: {} }] },
        { text: 'child approved and done' },
      ]),
      tools: [approveMe],
    },
    {
      name: 'tree-middle',
      model: new ScriptedModel((request) =>
        request.step === 1
          ? {
              text: 'asking my child',
              toolCalls: [{ name: 'answer', arguments: { message: 'deep' } }],
            }
          : { text: `middle got ${toolResults(request).join(' | ')}` },
      ),
      tools: [agentTool('child-answer', { name: 'answer', description: 'answers a question' })],
    },
  ];
}
