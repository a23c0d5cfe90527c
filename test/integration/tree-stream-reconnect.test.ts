/**
 * Issue 20 item 7: a tree stream (GET /v1/runs/:id/events?children=1) resumed with the composite
 * Last-Event-ID of any frame gives the rest of every log of the tree, exactly once, on a live run
 * and on a finished one. The worker pauses before it creates each child run, so a reconnect
 * right after a `child_run.linked` frame names a child that does not exist yet.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RunEvent } from '@baton/protocol';
import { startChildStack, type ChildStack } from '@baton/testing/child-stack';
import type { SseMessage, StreamOptions } from '@baton/testing/sse-client';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';

/** How long the worker waits between linking a child and creating it. */
const CHILD_START_PAUSE_MS = 3_000;

let s: ChildStack;

beforeAll(async () => {
  s = await startChildStack(inject('redisUrl'));
  await s.spawn({ pause: { 'before-child-start': CHILD_START_PAUSE_MS } });
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await s.stop();
});

const key = (m: SseMessage): string => {
  const e = JSON.parse(m.data) as RunEvent;
  return `${e.runId}#${String(e.seq)}`;
};

function tree(runId: string, opts: StreamOptions = {}) {
  return s.client.stream(`/v1/runs/${runId}/events?children=1`, { timeoutMs: 60_000, ...opts });
}

/** Reads `cut` frames, drops the connection, resumes at once with the last id, reads to the end. */
async function cutAndResume(
  runId: string,
  cut: number,
  onResume?: (lastEventId: string) => Promise<void>,
): Promise<SseMessage[]> {
  const head = await tree(runId, { stopWhen: (_m, all) => all.length >= cut });
  expect(head.status).toBe(200);
  if (head.endedByServer) return head.messages; // the whole stream had fewer frames
  const lastId = head.messages.at(-1)!.lastEventId;
  const tail = await tree(runId, {
    headers: { 'last-event-id': lastId },
    ...(onResume ? { onOpen: () => onResume(lastId) } : {}),
  });
  expect(tail.status).toBe(200);
  expect(tail.endedByServer).toBe(true);
  return [...head.messages, ...tail.messages];
}

/** The frames seen equal the uninterrupted stream's: every event of the tree, exactly once. */
function expectSameEvents(seen: readonly SseMessage[], reference: readonly SseMessage[]): void {
  const keys = seen.map(key);
  expect(new Set(keys).size).toBe(keys.length);
  expect([...keys].sort()).toEqual(reference.map(key).sort());
}

describe('tree stream: reconnecting at any frame loses nothing and repeats nothing', () => {
  it('on a live run, right after child_run.linked (the child not created yet) and at every other frame', async () => {
    const { runId } = await s.client.createRun('tree-batch', 'call answer_new');
    const childRunId = `${runId}.s1c0`;
    let childAbsentAtResume = false;
    const [reference, afterLink, ...cuts] = await Promise.all([
      tree(runId),
      (async () => {
        // Reads up to the first child_run.linked frame, then resumes while the worker pauses.
        const head = await tree(runId, { stopWhen: (m) => m.type === 'child_run.linked' });
        expect(head.status).toBe(200);
        const lastId = head.messages.at(-1)!.lastEventId;
        expect(lastId).toMatch(/;s1c0=0$/);
        const tail = await tree(runId, {
          headers: { 'last-event-id': lastId },
          onOpen: async () => {
            // The server checked the cursor before it answered: the child did not exist then.
            childAbsentAtResume = (await s.rt.store.meta(childRunId)) === null;
          },
        });
        expect(tail.endedByServer).toBe(true);
        return [...head.messages, ...tail.messages];
      })(),
      ...Array.from({ length: 40 }, (_, i) => cutAndResume(runId, i + 1)),
    ]);
    expect(reference.endedByServer).toBe(true);
    const events = reference.messages.map((m) => JSON.parse(m.data) as RunEvent);
    // The tree's child sent its log, not just the root.
    expect(events.filter((e) => e.runId === childRunId).length).toBeGreaterThan(3);
    expect(reference.messages.length).toBeLessThan(40);
    expect(childAbsentAtResume).toBe(true);
    expectSameEvents(afterLink, reference.messages);
    for (const seen of cuts) expectSameEvents(seen, reference.messages);
  }, 120_000);

  it('on a finished run, from the id of every frame', async () => {
    const { runId } = await s.client.createRun('tree-batch', 'call answer_new');
    await s.waitDone(runId, 60_000);
    const reference = await tree(runId);
    expect(reference.endedByServer).toBe(true);
    const frames = reference.messages;
    for (let i = 0; i < frames.length; i += 1) {
      const tail = await tree(runId, { headers: { 'last-event-id': frames[i]!.lastEventId } });
      expect(tail.endedByServer).toBe(true);
      expectSameEvents([...frames.slice(0, i + 1), ...tail.messages], frames);
    }
  }, 120_000);
});
