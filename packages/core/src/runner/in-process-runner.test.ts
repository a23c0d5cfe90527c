import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, toolResult } from '../tools.ts';
import { agentWith, echoTool, flush, runnerFor } from '../testing/fixtures.ts';

describe('InProcessRunner', () => {
  it('runs a tool round and ends naturally', async () => {
    const agent = agentWith(
      [
        { text: 'calling', toolCalls: [{ name: 'echo', arguments: { value: 'hi' } }] },
        { text: 'done' },
      ],
      [echoTool()],
    );
    const { runner } = runnerFor(agent);
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'go' }],
    });
    const cp = await finished;
    expect(cp.status).toBe('done');
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const types = runner.events(runId).map((e) => e.type);
    expect(types[0]).toBe('run.created');
    expect(types.at(-1)).toBe('run.finished');
    expect(cp.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const seqs = runner.events(runId).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it('suspends an approval-gated tool and resumes after approval', async () => {
    const deploy = defineTool({
      name: 'deploy',
      description: 'deploys',
      inputSchema: z.object({ env: z.string() }),
      approval: { message: 'Deploy?' },
      execute: async (args) => toolResult.success({ deployed: args.env }),
    });
    const agent = agentWith(
      [{ toolCalls: [{ name: 'deploy', arguments: { env: 'prod' } }] }, { text: 'deployed' }],
      [deploy],
    );
    const { runner } = runnerFor(agent);
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'deploy' }],
    });
    await flush();
    let cp = await runner.checkpoint(runId);
    expect(cp?.status).toBe('waiting');
    const callId = cp!.round[0]!;
    await runner.submitDecisions(runId, [
      { decisionId: 'd1', toolCallId: callId, action: 'resume' },
    ]);
    cp = await finished;
    expect(cp.status).toBe('done');
    const toolMessage = cp.messages.find((m) => m.role === 'tool');
    expect(toolMessage).toMatchObject({
      toolCallId: callId,
      content: { deployed: 'prod' },
      isError: false,
    });
  });
});
