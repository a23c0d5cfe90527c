import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../clock.ts';
import { defineTool, toolResult, type ToolDefinition } from '../tools.ts';
import { flush } from '../testing/fixtures.ts';
import { executeTool, type ExecuteToolOptions } from './execute-tool.ts';
import type { ToolInvocation } from './tool-round.ts';

const invocation: ToolInvocation = {
  toolCallId: 'c1',
  toolName: 'slow',
  arguments: {},
  attempt: 0,
  idempotencyKey: 'r:c1:0',
};

function options(clock: ManualClock, signal = new AbortController().signal): ExecuteToolOptions {
  return {
    identity: { runId: 'r', threadId: 't', turnId: 'turn-0', tenantId: 'x', agent: 'a' },
    state: { run: {}, thread: {} },
    signal,
    now: () => clock.now(),
    sleep: (ms, s) => clock.sleep(ms, s),
  };
}

/** A tool that finishes only when its signal aborts, and records why. */
function hanging(seen: unknown[], timeoutMs?: number): ToolDefinition {
  return defineTool({
    name: 'slow',
    description: 'never finishes on its own',
    inputSchema: z.object({}),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    execute: (_args, ctx) =>
      new Promise((_, reject) => {
        ctx.signal.addEventListener('abort', () => {
          seen.push(ctx.signal.reason);
          reject(new Error('aborted'));
        });
      }),
  });
}

describe('executeTool timeouts', () => {
  it('a tool past its timeoutMs fails with tool_timeout and its signal aborts', async () => {
    const clock = new ManualClock(0);
    const seen: unknown[] = [];
    const pending = executeTool(hanging(seen, 500), invocation, options(clock));
    await flush();
    await clock.advance(499);
    await flush();
    expect(seen).toHaveLength(0);
    await clock.advance(1);
    const result = await pending;
    expect(result.result).toMatchObject({ kind: 'error', code: 'tool_timeout' });
    expect(result.result.kind === 'error' && result.result.message).toContain('500 ms');
    expect(seen).toHaveLength(1);
  });

  it("the caller's abort (cancel, lost lease) propagates instead of becoming a result", async () => {
    const clock = new ManualClock(0);
    const caller = new AbortController();
    const pending = executeTool(hanging([], 500), invocation, options(clock, caller.signal));
    await flush();
    caller.abort(new Error('run cancelled'));
    await expect(pending).rejects.toThrow('aborted');
    expect(clock.pendingSleepers()).toBe(0);
  });

  it('a tool that finishes in time is unaffected and leaves no timer behind', async () => {
    const clock = new ManualClock(0);
    const quick = defineTool({
      name: 'slow',
      description: 'quick',
      inputSchema: z.object({}),
      timeoutMs: 500,
      execute: async () => toolResult.success({ ok: true }),
    });
    const result = await executeTool(quick, invocation, options(clock));
    expect(result.result).toEqual({ kind: 'success', output: { ok: true } });
    await flush();
    expect(clock.pendingSleepers()).toBe(0);
  });
});
