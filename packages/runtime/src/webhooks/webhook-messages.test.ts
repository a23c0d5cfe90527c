import { InProcessRunner } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import { RunChildFinishedDataSchema, WebhookMessageSchema, type RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../system-clock.ts';
import { webhookIdFor } from './signing.ts';
import {
  childFinishedData,
  mayProduceMessages,
  messagesFor,
  webhookTypeOf,
} from './webhook-messages.ts';

const ctx = { tenantId: 't1', metadata: { order: '42' } };

/** A real demo run: waits for the deploy approval, then finishes once approved. */
async function approvedDeployRun(): Promise<{ waiting: RunEvent[]; all: RunEvent[] }> {
  const runner = new InProcessRunner({ agents: createDemoAgents(systemClock), clock: systemClock });
  const { runId, finished } = await runner.start({
    agent: 'assistant',
    input: [{ role: 'user', content: 'deploy checkout' }],
  });
  for (let i = 0; i < 200 && (await runner.checkpoint(runId))?.status !== 'waiting'; i += 1)
    await new Promise((r) => setTimeout(r, 5));
  const waiting = [...runner.events(runId)];
  const cp = await runner.checkpoint(runId);
  const suspended = cp!.round.filter((id) => cp!.calls[id]?.status === 'suspended');
  await runner.submitDecisions(
    runId,
    suspended.map((toolCallId, i) => ({ decisionId: `d${i}`, toolCallId, action: 'resume' })),
  );
  await finished;
  return { waiting, all: [...runner.events(runId)] };
}

describe('webhook messages', () => {
  it('a run that waits, then finishes, yields run.waiting (its await tickets) and run.finished', async () => {
    const { waiting, all } = await approvedDeployRun();
    const first = messagesFor(waiting, 0, ctx);
    expect(first.map((d) => d.type)).toEqual(['run.waiting']);
    const msg = WebhookMessageSchema.parse(first[0]!.message);
    expect(msg.type).toBe('run.waiting');
    if (msg.type !== 'run.waiting') throw new Error('unreachable');
    expect(msg.data).toMatchObject({ tenantId: 't1', agent: 'assistant', status: 'waiting' });
    expect(msg.data.metadata).toEqual({ order: '42' });
    expect(msg.data.await.calls.map((c) => c.toolName)).toContain('deploy_service');
    expect(msg.data.await.calls[0]).toHaveProperty('resumeMode');
    expect(msg.timestamp).toBe(new Date(msg.data.since).toISOString());

    // After the cursor: only what is new, and the waiting message is derived identically again.
    const cursor = waiting.at(-1)!.seq;
    const later = messagesFor(all, cursor, ctx);
    expect(later.map((d) => d.type)).toEqual(['run.finished']);
    const done = WebhookMessageSchema.parse(later[0]!.message);
    if (done.type !== 'run.finished') throw new Error('unreachable');
    expect(done.data.termination).toEqual({ kind: 'natural_end' });
    expect(done.data.status).toBe('done');
    expect(done.data.seq).toBe(all.at(-1)!.seq);
    expect(typeof done.data.lastAssistantMessage).toBe('string');
    expect(messagesFor(all, 0, ctx)[0]).toEqual(first[0]);
  });

  it('maps only run.finished events, and says so cheaply for a transition', () => {
    expect(webhookTypeOf({ type: 'step.started', step: 1 })).toBeNull();
    const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
    const waiting = {
      type: 'run.finished',
      status: 'waiting',
      termination: { kind: 'suspended' },
      usage,
    } as const;
    expect(webhookTypeOf(waiting)).toBe('run.waiting');
    expect(webhookTypeOf({ ...waiting, status: 'done', termination: { kind: 'cancelled' } })).toBe(
      'run.finished',
    );
    expect(mayProduceMessages([{ type: 'step.started', step: 1 }])).toBe(false);
    expect(mayProduceMessages([{ type: 'step.started', step: 1 }, waiting])).toBe(true);
  });

  it('run.child_finished: the payload the child-run end will send', () => {
    const parent = {
      runId: 'parent-1',
      threadId: 'th',
      turnId: 'turn-0',
      tenantId: 't1',
      agent: 'planner',
      seq: 17,
      metadata: {},
    };
    const data = childFinishedData(parent, {
      runId: 'child-1',
      agent: 'researcher',
      status: 'done',
      termination: { kind: 'natural_end' },
      toolCallId: 'call-3',
    });
    expect(RunChildFinishedDataSchema.parse(data)).toEqual({
      ...parent,
      child: {
        runId: 'child-1',
        agent: 'researcher',
        status: 'done',
        termination: { kind: 'natural_end' },
        toolCallId: 'call-3',
      },
    });
    const message = { type: 'run.child_finished', timestamp: new Date(0).toISOString(), data };
    expect(WebhookMessageSchema.parse(message)).toEqual(message);
  });

  it('webhook ids are a function of run, event and type: stable, distinct, header-safe', () => {
    const a = webhookIdFor('run-1', 7, 'run.finished');
    expect(webhookIdFor('run-1', 7, 'run.finished')).toBe(a);
    expect(webhookIdFor('run-1', 8, 'run.finished')).not.toBe(a);
    expect(webhookIdFor('run-2', 7, 'run.finished')).not.toBe(a);
    expect(a).toMatch(/^msg_[A-Za-z0-9_-]{27}$/);
  });
});
