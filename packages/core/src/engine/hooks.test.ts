import type { Phase } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Plugin } from '../plugins.ts';
import { defineTool, toolResult } from '../tools.ts';
import { agentWith, runnerFor } from '../testing/fixtures.ts';
import { echo } from '../testing/scenario-agents.ts';
import { ScriptedModel } from '../model/scripted-model.ts';
import type { InferenceRequest } from '../model.ts';

const start = { agent: 'test-agent', input: [{ role: 'user' as const, content: 'go' }] };

describe('plugin hooks', () => {
  it('fires the nine phases in seed order', async () => {
    const seen: Phase[] = [];
    const recorder: Plugin = {
      name: 'recorder',
      hooks: {
        run_start: () => (seen.push('run_start'), []),
        step_start: () => (seen.push('step_start'), []),
        before_inference: () => (seen.push('before_inference'), []),
        after_inference: () => (seen.push('after_inference'), []),
        tool_gate: () => (seen.push('tool_gate'), undefined),
        before_tool_execute: () => (seen.push('before_tool_execute'), []),
        after_tool_execute: () => (seen.push('after_tool_execute'), []),
        step_end: () => (seen.push('step_end'), []),
        run_end: () => (seen.push('run_end'), []),
      },
    };
    const agent = agentWith([{ toolCalls: [{ name: 'echo' }] }, { text: 'done' }], [echo], {
      plugins: [recorder],
    });
    const { runner } = runnerFor(agent);
    await (
      await runner.start(start)
    ).finished;
    expect(seen).toEqual([
      'run_start',
      'step_start',
      'before_inference',
      'after_inference',
      'tool_gate',
      'before_tool_execute',
      'after_tool_execute',
      'step_end',
      'step_start',
      'before_inference',
      'after_inference',
      'step_end',
      'run_end',
    ]);
  });

  it('BeforeInference adds context, overrides params and filters tools for this inference only', async () => {
    const requests: InferenceRequest[] = [];
    const model = new ScriptedModel((req) => {
      requests.push(req);
      return { text: 'ok' };
    });
    const plugin: Plugin = {
      name: 'ctx',
      hooks: {
        before_inference: () => [
          { kind: 'add_context', content: 'today is Sunday' },
          { kind: 'set_params', params: { temperature: 0.1 } },
          { kind: 'filter_tools', exclude: ['echo'] },
        ],
      },
    };
    const other = defineTool({
      name: 'other',
      description: 'o',
      inputSchema: z.object({}),
      execute: async () => toolResult.success(1),
    });
    const { runner } = runnerFor(agentWith(model, [echo, other], { plugins: [plugin] }));
    const cp = await (await runner.start(start)).finished;
    expect(requests[0]?.messages.at(-1)).toMatchObject({
      role: 'system',
      content: 'today is Sunday',
    });
    expect(requests[0]?.params).toEqual({ temperature: 0.1 });
    expect(requests[0]?.tools.map((t) => t.name)).toEqual(['other']);
    expect(requests[0]?.tools[0]?.inputSchema).toMatchObject({ type: 'object' });
    // Context is not persisted into the thread.
    expect(cp.messages.some((m) => m.content === 'today is Sunday')).toBe(false);
  });

  it('BeforeInference can skip inference -> BehaviorRequested', async () => {
    const { runner } = runnerFor(
      agentWith([{ text: 'never' }], [], {
        plugins: [{ name: 's', hooks: { before_inference: () => [{ kind: 'skip_inference' }] } }],
      }),
    );
    const cp = await (await runner.start(start)).finished;
    expect(cp.termination).toEqual({ kind: 'behavior_requested' });
    expect(cp.messages.filter((m) => m.role === 'assistant')).toHaveLength(0);
  });

  it('AfterInference edits the tool-call list and can terminate', async () => {
    const editing: Plugin = {
      name: 'edit',
      hooks: {
        after_inference: ({ response }) => [
          {
            kind: 'edit_tool_calls',
            toolCalls: response.toolCalls.filter((c) => c.name !== 'forbidden'),
          },
        ],
      },
    };
    const { runner } = runnerFor(
      agentWith(
        [
          { toolCalls: [{ name: 'forbidden' }, { name: 'echo', arguments: { value: 'v' } }] },
          { text: 'ok' },
        ],
        [echo],
        { plugins: [editing] },
      ),
    );
    const cp = await (await runner.start(start)).finished;
    expect(cp.messages.filter((m) => m.role === 'tool').map((m) => m.toolName)).toEqual(['echo']);

    const stopper: Plugin = {
      name: 'stop',
      hooks: {
        after_inference: () => [
          { kind: 'terminate', reason: { kind: 'stopped', code: 'policy', detail: 'no' } },
        ],
      },
    };
    const r2 = runnerFor(
      agentWith([{ toolCalls: [{ name: 'echo' }] }], [echo], { plugins: [stopper] }),
    );
    const cp2 = await (await r2.runner.start(start)).finished;
    expect(cp2.termination).toEqual({ kind: 'stopped', code: 'policy', detail: 'no' });
  });

  it('ToolGate: Block > Suspend > SetResult when hooks disagree; block can end the run', async () => {
    const gate = (kind: 'block' | 'suspend' | 'set_result'): Plugin => ({
      name: kind,
      hooks: {
        tool_gate: () =>
          kind === 'block'
            ? { kind: 'block', reason: 'not allowed' }
            : kind === 'suspend'
              ? {
                  kind: 'suspend',
                  ticket: { reason: 'approval', message: 'ok?', resumeMode: 'replay_tool_call' },
                }
              : { kind: 'set_result', result: toolResult.success('cached') },
      },
    });
    const script = [{ toolCalls: [{ id: 'x', name: 'echo' }] }, { text: 'ok' }];
    const blocked = await (
      await runnerFor(
        agentWith(script, [echo], {
          plugins: [gate('set_result'), gate('suspend'), gate('block')],
        }),
      ).runner.start(start)
    ).finished;
    expect(blocked.messages.find((m) => m.role === 'tool')).toMatchObject({
      isError: true,
      content: { error: 'blocked: not allowed' },
    });
    expect(blocked.termination).toEqual({ kind: 'natural_end' });

    const { runner } = runnerFor(
      agentWith(script, [echo], { plugins: [gate('set_result'), gate('suspend')] }),
    );
    const r = await runner.start(start);
    await new Promise((res) => setImmediate(res));
    expect((await runner.checkpoint(r.runId))?.status).toBe('waiting');

    const cached = await (
      await runnerFor(agentWith(script, [echo], { plugins: [gate('set_result')] })).runner.start(
        start,
      )
    ).finished;
    expect(cached.messages.find((m) => m.role === 'tool')).toMatchObject({
      content: 'cached',
      isError: false,
    });

    const runBlock: Plugin = {
      name: 'rb',
      hooks: {
        tool_gate: () => ({ kind: 'block', reason: 'policy violation', terminateRun: true }),
      },
    };
    const ended = await (
      await runnerFor(agentWith(script, [echo], { plugins: [runBlock] })).runner.start(start)
    ).finished;
    expect(ended.termination).toEqual({ kind: 'blocked', reason: 'policy violation' });
    expect(ended.status).toBe('done');
  });

  it('hooks read a frozen snapshot: mutating it ends the run with Error instead of corrupting it', async () => {
    const rogue: Plugin = {
      name: 'rogue',
      hooks: {
        step_start: ({ checkpoint }) => {
          (checkpoint as unknown as { step: number }).step = 99;
          return [];
        },
      },
    };
    const { runner } = runnerFor(agentWith([{ text: 'x' }], [], { plugins: [rogue] }));
    const cp = await (await runner.start(start)).finished;
    expect(cp.termination).toMatchObject({ kind: 'error' });
    expect(cp.step).not.toBe(99);
  });

  it('unknown tools and invalid arguments are tool failures the model sees; the loop continues', async () => {
    const strict = defineTool({
      name: 'strict',
      description: 's',
      inputSchema: z.object({ n: z.number() }),
      execute: async ({ n }) => toolResult.success(n),
    });
    const throwing = defineTool({
      name: 'throws',
      description: 't',
      inputSchema: z.object({}),
      execute: async () => {
        throw new Error('boom');
      },
    });
    const { runner } = runnerFor(
      agentWith(
        [
          {
            toolCalls: [
              { id: 'u', name: 'nope' },
              { id: 'i', name: 'strict', arguments: { n: 'x' } },
              { id: 't', name: 'throws' },
            ],
          },
          { text: 'ok' },
        ],
        [strict, throwing],
      ),
    );
    const cp = await (await runner.start(start)).finished;
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const tools = cp.messages.filter((m) => m.role === 'tool');
    expect(tools.every((m) => m.isError)).toBe(true);
    expect(JSON.stringify(tools[0]?.content)).toContain('not available');
    expect(JSON.stringify(tools[1]?.content)).toContain('invalid arguments');
    expect(tools[2]?.content).toEqual({ error: 'boom' });
  });

  it('a state patch to an unregistered key is a runtime error -> TerminationReason Error', async () => {
    const bad = defineTool({
      name: 'bad',
      description: 'b',
      inputSchema: z.object({}),
      execute: async () => ({
        result: toolResult.success(1),
        patches: [{ op: 'set', key: 'nope', value: 1 }],
      }),
    });
    const { runner } = runnerFor(
      agentWith([{ toolCalls: [{ name: 'bad' }] }, { text: 'x' }], [bad]),
    );
    const cp = await (await runner.start(start)).finished;
    expect(cp.termination).toMatchObject({ kind: 'error' });
    expect(cp.status).toBe('done');
  });
});
