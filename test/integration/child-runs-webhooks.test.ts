/**
 * The `run.child_finished` webhook end to end: a parent run with a webhook calls two child
 * runs (agent-as-tool) on real worker processes; a real local receiver gets one signed
 * `run.child_finished` per child (naming it, its status and the call it ran for), then the
 * parent's `run.finished`, each under a stable webhook id.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import {
  CreateRunResponseSchema,
  WebhookMessageSchema,
  type WebhookMessage,
} from '@baton/protocol';
import { startChildStack, type ChildStack } from '@baton/testing/child-stack';
import { waitFor } from '@baton/testing/worker-harness';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';
import { startWebhookReceiver, type WebhookReceiver } from '@baton/testing/webhook-receiver';

const LOOPBACK_ALLOWED = { BATON_WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_SWEEP_INTERVAL_MS: '500' };

let s: ChildStack;
let rx: WebhookReceiver;

beforeAll(async () => {
  rx = await startWebhookReceiver(() => 204);
  s = await startChildStack(inject('redisUrl'), LOOPBACK_ALLOWED);
  await s.spawn({ env: LOOPBACK_ALLOWED });
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await s?.stop();
  await rx?.close();
});

describe('child runs and webhooks', () => {
  it('a parent with a webhook reports each child that ends, then itself', async () => {
    const created = await s.client.post('/v1/runs', {
      agent: 'tree-stream',
      input: { messages: [{ role: 'user', content: 'call answer,answer' }] },
      webhook: { url: rx.url('/tree') },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const { runId, webhook } = CreateRunResponseSchema.parse(created.body);
    await s.waitDone(runId);
    const messages = await waitFor(
      async () => {
        const got = rx.on('/tree');
        const parsed = got.map((r) => WebhookMessageSchema.parse(JSON.parse(r.body)));
        return parsed.some((m) => m.type === 'run.finished') &&
          parsed.filter((m) => m.type === 'run.child_finished').length >= 2
          ? got
          : null;
      },
      20_000,
      'run.child_finished twice and run.finished',
    );
    const children = await s.childrenOf(runId);
    expect(children).toHaveLength(2);
    const bodies: WebhookMessage[] = messages.map((r) => {
      // Signed with the run's secret (Standard Webhooks).
      const verified = new Webhook(webhook?.secret ?? '').verify(r.body, r.headers);
      return WebhookMessageSchema.parse(verified);
    });
    const childEnds = bodies.flatMap((m) => (m.type === 'run.child_finished' ? [m.data] : []));
    expect(childEnds.map((d) => d.runId)).toEqual([runId, runId]);
    expect(childEnds.map((d) => d.child.runId).sort()).toEqual(
      children.map((c) => c.identity.runId).sort(),
    );
    for (const d of childEnds) {
      expect(d.child).toMatchObject({ agent: 'child-answer', status: 'done' });
      expect(d.child.toolCallId).toBeDefined();
    }
    expect(childEnds.map((d) => d.child.agent)).toEqual(children.map((c) => c.identity.agent));
    // One id per message: a receiver can drop redeliveries by it.
    const ids = messages.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(ids.length);
    expect(bodies.at(-1)?.type).toBe('run.finished');
  });
});
