import { describe, expect, it } from 'vitest';
import { runCommands } from './engine/engine.ts';
import { defineTool, toolResult } from './tools.ts';
import { z } from 'zod';
import { foldSnapshot } from './snapshot.ts';
import { agentWith, flush, runnerFor } from './testing/fixtures.ts';
import { waitForEventTool } from './wait-for-event.ts';

const agent = agentWith(
  [
    {
      toolCalls: [
        {
          name: 'baton_wait_for_event',
          id: 'w',
          arguments: { name: 'paid', key: 'order-1', timeoutMs: 5_000 },
        },
      ],
    },
    { text: 'done' },
  ],
  [waitForEventTool()],
);

describe('waitForEventTool', () => {
  it('suspends its call on the event, with the expiry fixed when it suspends', async () => {
    const { runner, clock } = runnerFor(agent);
    const { runId } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'x' }],
    });
    await flush();
    const cp = (await runner.checkpoint(runId))!;
    expect(cp.status).toBe('waiting');
    const waitFor = { kind: 'event', name: 'paid', key: 'order-1', timeoutMs: 5_000 };
    expect(cp.calls['w']?.ticket?.waitFor).toEqual({ ...waitFor, expiresAt: clock.now() + 5_000 });
    const snapshot = foldSnapshot(runner.events(runId));
    expect(snapshot.await?.calls[0]?.waitFor).toEqual({
      ...waitFor,
      expiresAt: clock.now() + 5_000,
    });
  });

  it("the event's payload is the call's result (nothing executes again)", async () => {
    const { runner } = runnerFor(agent);
    const { runId, finished } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'x' }],
    });
    await flush();
    await runner.submitDecisions(runId, [
      {
        decisionId: 'e',
        toolCallId: 'w',
        action: 'resume',
        payload: { event: { name: 'paid', key: 'order-1', data: 1 } },
        source: 'event',
      },
    ]);
    await finished;
    const result = runner.events(runId).find((e) => e.type === 'tool_call.result');
    expect(result).toMatchObject({
      outcome: { status: 'succeeded', output: { event: { name: 'paid', data: 1 } } },
    });
  });

  it("its timeout is the call's deadline: it resumes with { timedOut: true }, source 'timeout'", async () => {
    const { runner, clock } = runnerFor(agent);
    const { runId } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'x' }],
    });
    await flush();
    const cp = (await runner.checkpoint(runId))!;
    const at = clock.now() + 5_000;
    expect(cp.calls['w']?.ticket?.deadline).toEqual({
      at,
      outcome: { action: 'resume', payload: { timedOut: true } },
    });
    expect(runCommands.expireDeadline(cp, 'w', at - 1).expiry).toEqual({ kind: 'not_due', at });
    const t = runCommands.expireDeadline(cp, 'w', at);
    expect(t.expiry.kind).toBe('fired');
    expect(t.checkpoint.inbox).toEqual([
      expect.objectContaining({ action: 'resume', source: 'timeout', payload: { timedOut: true } }),
    ]);
    // Exactly once: the call has its decision now.
    expect(runCommands.expireDeadline(t.checkpoint, 'w', at + 1).expiry.kind).toBe('moot');
  });

  it("a tool's own event wait keeps the deadline its ticket gives", async () => {
    const own = defineTool({
      name: 'await_payment',
      description: 'waits for a payment, denied after a minute',
      inputSchema: z.object({}),
      resumeMode: 'use_decision_as_tool_result',
      execute: () =>
        Promise.resolve(
          toolResult.pending({
            reason: 'input',
            message: 'waiting',
            resumeMode: 'use_decision_as_tool_result',
            waitFor: { kind: 'event', name: 'paid', key: 'k', timeoutMs: 5_000 },
            deadline: { timeout: 60_000, outcome: { action: 'deny' } },
          }),
        ),
    });
    const { runner, clock } = runnerFor(
      agentWith([{ toolCalls: [{ name: 'await_payment', id: 'p' }] }, { text: 'done' }], [own]),
    );
    const { runId } = await runner.start({
      agent: 'test-agent',
      input: [{ role: 'user', content: 'x' }],
    });
    await flush();
    const ticket = (await runner.checkpoint(runId))!.calls['p']?.ticket;
    expect(ticket?.waitFor).toMatchObject({ expiresAt: clock.now() + 5_000 });
    expect(ticket?.deadline).toEqual({ at: clock.now() + 60_000, outcome: { action: 'deny' } });
  });
});
