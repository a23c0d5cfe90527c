import { APICallError } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelPort } from '../model.ts';
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

describe('InProcessRunner model-call retries', () => {
  const overloaded = () =>
    new APICallError({
      message: 'overloaded',
      url: 'http://provider',
      requestBodyValues: {},
      statusCode: 529,
    });
  const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

  it('retries like a worker: model.retry, then a reset of what the failed attempt streamed', async () => {
    let calls = 0;
    const model: ModelPort = {
      id: 'flaky',
      async *stream() {
        calls += 1;
        if (calls === 1) {
          yield { type: 'text-delta', delta: 'half an ans' };
          throw overloaded();
        }
        yield { type: 'text-delta', delta: 'a whole answer' };
        yield { type: 'finish', usage, finishReason: 'stop' };
      },
    };
    const { runner, clock } = runnerFor(
      agentWith(model, [], { modelRetry: { baseDelayMs: 100, maxDelayMs: 100 } }),
    );
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'hi' }],
    });
    await flush();
    expect(calls).toBe(1);
    await clock.advance(100);
    const cp = await finished;
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(cp.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'a whole answer' });
    const events = runner.events(runId);
    const retry = events.find((e) => e.type === 'model.retry');
    expect(retry).toMatchObject({ attempt: 1, reason: 'http 529', message: 'overloaded' });
    const types = events.map((e) => e.type);
    expect(types.indexOf('inference.reset')).toBeGreaterThan(types.indexOf('model.retry'));
    expect(types.indexOf('inference.reset')).toBeLessThan(types.lastIndexOf('text.delta'));
  });

  it('fails the run with the provider message once the attempts are spent', async () => {
    const model: ModelPort = {
      id: 'down',
      // eslint-disable-next-line require-yield
      async *stream() {
        throw overloaded();
      },
    };
    const { runner, clock } = runnerFor(
      agentWith(model, [], { modelRetry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 10 } }),
    );
    const { finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'hi' }],
    });
    await flush();
    await clock.advance(10);
    const cp = await finished;
    expect(cp.termination).toEqual({
      kind: 'error',
      message: 'model failed after 2 attempts: overloaded',
    });
  });
});
