import type { Checkpoint, ResumeMode, RunEvent } from '@baton/protocol';
import { ManualClock, InProcessRunner, applicableDecisions } from '@baton/core';
import { MATRIX_CASES, matrixAgentName, matrixAgents, payloadFor } from '@baton/core/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  callEvents,
  normalizeEvents,
  normalizeMessages,
  runLevelEvents,
} from '@baton/testing/event-normalize';
import { startHarness, waitFor, type Harness } from '@baton/testing/worker-harness';

interface Outcome {
  readonly final: Checkpoint;
  readonly events: RunEvent[];
  /** Call statuses at each point the run waited. */
  readonly waits: string[][];
}

function statuses(cp: Checkpoint): string[] {
  return ['S1', 'E', 'S2'].map((id) => cp.calls[id]?.status ?? '-');
}

/** The same script for both drivers: at each wait, decide the first suspended call. */
async function drive(
  start: () => Promise<string>,
  settled: (runId: string) => Promise<Checkpoint>,
  decide: (runId: string, toolCallId: string, payload: unknown) => Promise<void>,
  events: (runId: string) => Promise<RunEvent[]>,
  resume: ResumeMode,
): Promise<Outcome> {
  const runId = await start();
  const waits: string[][] = [];
  for (let i = 0; i < 10; i += 1) {
    const cp = await settled(runId);
    if (cp.status === 'done') return { final: cp, events: await events(runId), waits };
    waits.push(statuses(cp));
    const next = cp.round.find(
      (id) => cp.calls[id]?.status === 'suspended' && !cp.inbox.some((d) => d.toolCallId === id),
    );
    if (!next) throw new Error(`waiting with nothing to decide: ${JSON.stringify(statuses(cp))}`);
    await decide(runId, next, payloadFor(resume));
  }
  throw new Error('too many waits');
}

describe('distributed worker matches the in-process runner (mode × policy × resume mode)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(inject('redisUrl'), matrixAgents(), { workers: 2 });
  });
  afterAll(async () => {
    await h.stop();
  });

  it.each(MATRIX_CASES)('%s × %s × %s', async (mode, policy, resume) => {
    const agent = matrixAgentName(mode, policy, resume);
    const input = [{ role: 'user' as const, content: 'go' }];

    const runner = new InProcessRunner({ agents: matrixAgents(), clock: new ManualClock(1) });
    const reference = await drive(
      async () => (await runner.start({ agent, input })).runId,
      async (runId) =>
        waitFor(async () => {
          for (let i = 0; i < 50; i += 1) await Promise.resolve();
          const cp = await runner.checkpoint(runId);
          return cp &&
            (cp.status === 'done' ||
              (cp.status === 'waiting' && applicableDecisions(cp).length === 0))
            ? cp
            : null;
        }),
      async (runId, toolCallId, payload) => {
        await runner.submitDecisions(runId, [
          {
            decisionId: `d-${toolCallId}`,
            toolCallId,
            action: 'resume',
            ...(payload === undefined ? {} : { payload: payload as never }),
          },
        ]);
      },
      async (runId) => runner.events(runId),
      resume,
    );

    const svc = h.client.service;
    let lastVersion = 0;
    const distributed = await drive(
      async () => (await svc.createRun('parity', { agent, input: { messages: input } })).runId,
      async (runId) =>
        waitFor(
          async () => {
            const stored = await h.client.store.load(runId);
            if (!stored) return null;
            const cp = stored.checkpoint;
            // Settled: done, or waiting with no decision it could still apply.
            const settled =
              cp.status === 'done' ||
              (cp.status === 'waiting' && applicableDecisions(cp).length === 0);
            if (!settled || stored.version === lastVersion) return null;
            lastVersion = stored.version;
            return cp;
          },
          20_000,
          `run ${runId} to settle`,
        ),
      async (runId, toolCallId, payload) => {
        await svc.submitDecisions('parity', runId, [
          {
            decisionId: `d-${toolCallId}`,
            toolCallId,
            action: 'resume',
            ...(payload === undefined ? {} : { payload: payload as never }),
          },
        ]);
      },
      async (runId) => h.client.store.readEvents(runId),
      resume,
    );

    expect(distributed.final.termination).toEqual(reference.final.termination);
    expect(distributed.waits).toEqual(reference.waits);
    expect(normalizeMessages(distributed.final)).toEqual(normalizeMessages(reference.final));
    expect(distributed.final.usage).toEqual(reference.final.usage);
    const ref = normalizeEvents(
      reference.events,
      reference.final.identity.runId,
      reference.final.identity.threadId,
    );
    const dist = normalizeEvents(
      distributed.events,
      distributed.final.identity.runId,
      distributed.final.identity.threadId,
    );
    expect(runLevelEvents(dist)).toEqual(runLevelEvents(ref));
    for (const id of ['S1', 'E', 'S2']) expect(callEvents(dist, id)).toEqual(callEvents(ref, id));
    expect(distributed.events.map((e) => e.seq)).toEqual(distributed.events.map((_, i) => i + 1));
    expect(dist.length).toBe(ref.length);
  });
});
