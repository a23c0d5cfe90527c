/**
 * A host power loss under relaxed durability, as Redis sees it: its AOF loses a tail (with
 * `appendfsync everysec`, about the last second), and it restarts from what is left, while the
 * worker and API processes live on. Cut here at a chosen point: Redis runs with
 * `appendfsync always` (so the file holds exactly what was acknowledged), the size of its AOF is
 * noted at that point, and after kill -9 the file is truncated back to it.
 * What may be lost is a suffix; nothing may be doubled:
 * - a worker that had read a run's messages past the cut point must not add what it kept on top
 *   of the shorter list (the round's messages twice, fed to the model by the thread's next run);
 * - an SSE client that was sent events the log lost is told so (`event: error`,
 *   `event_log_rewound`) and the stream ends, instead of carrying on over a history whose seqs now
 *   mean other events.
 */
import { readdir, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  DecisionsResponse,
  ErrorBody,
  Message,
  RunEvent,
  RunSnapshot,
  ThreadResponse,
} from '@baton/protocol';
import { eventsOf, type ApiClient } from '@baton/testing/api-harness';
import { startProcessStack, type ProcessStack } from '@baton/testing/process-stack';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import type { SseMessage } from '@baton/testing/sse-client';
import { waitFor } from '@baton/testing/worker-harness';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';

let redis: RedisProcess;
let stack: ProcessStack;
let client: ApiClient;

beforeAll(async () => {
  redis = await startRedisProcess({ aof: 'always' });
  stack = await startProcessStack(redis.url);
  client = stack.client;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await stopAllWorkerProcesses();
  await redis?.stop();
});

/** The AOF file Redis appends to (Redis 7: appendonlydir/<name>.<n>.incr.aof). */
async function incrementalAof(): Promise<string> {
  const dir = join(redis.dir, 'appendonlydir');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.incr.aof')).sort();
  const last = files.at(-1);
  if (last === undefined) throw new Error(`no incremental AOF in ${dir}`);
  return join(dir, last);
}

async function status(runId: string, ...wanted: string[]): Promise<RunSnapshot> {
  return waitFor(
    async () => {
      const r = await client.get<RunSnapshot>(`/v1/runs/${runId}`).catch(() => null);
      return r?.status === 200 && wanted.includes(r.body.status) ? r.body : null;
    },
    30_000,
    `run ${runId} to be ${wanted.join(' or ')}`,
  );
}

const decide = (runId: string, snapshot: RunSnapshot) =>
  client.post<DecisionsResponse>(`/v1/runs/${runId}/decisions`, {
    decisions: [
      { decisionId: 'd-1', toolCallId: snapshot.await!.calls[0]!.toolCallId, action: 'resume' },
    ],
  });

/** What identifies a message in order: its role and id (a tool result: its call). */
function shape(messages: readonly Message[]): string[] {
  return messages.map((m) => (m.role === 'tool' ? `tool:${m.toolCallId}` : `${m.role}:${m.id}`));
}

/** The same, as the run's event log tells it. */
function shapeOfLog(events: readonly RunEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    if (e.type === 'message.input' || e.type === 'message.assistant')
      out.push(`${e.message.role}:${e.message.id}`);
    if (e.type === 'tool_call.result') out.push(`tool:${e.toolCallId}`);
  }
  return out;
}

describe('a Redis power loss under relaxed durability (the AOF loses its tail)', () => {
  it('loses a suffix and doubles nothing: messages match the log, streams are told', async () => {
    const store = stack.api.api.runtime.store;
    // The cut point: two runs created and nothing else done for them yet (the worker is paused).
    stack.worker.kill('SIGSTOP');
    const a = await client.createRun('assistant', 'deploy please');
    const b = await client.createRun('assistant', 'deploy please');
    const aof = await incrementalAof();
    const cut = (await stat(aof)).size;
    stack.worker.kill('SIGCONT');

    const waitingA = await status(a.runId, 'waiting');
    await status(b.runId, 'waiting');
    // A client follows B's events live across the loss.
    const seenB: SseMessage[] = [];
    const streamB = client.stream(`/v1/runs/${b.runId}/events`, {
      timeoutMs: 120_000,
      onMessage: (m) => seenB.push(m),
    });
    // And another follows B's tree (the composite-cursor stream of ?children=1).
    const seenTreeB: SseMessage[] = [];
    const treeB = client.stream(`/v1/runs/${b.runId}/events?children=1`, {
      timeoutMs: 120_000,
      onMessage: (m) => seenTreeB.push(m),
    });
    const lastSeqB = await store.lastSeq(b.runId);
    await waitFor(
      async () =>
        Promise.resolve(
          seenB.some((m) => m.lastEventId === String(lastSeqB)) &&
            seenTreeB.some((m) => m.lastEventId === String(lastSeqB)),
        ),
      20_000,
      "B's streams to reach the end of its log",
    );

    // A goes on to the end: the worker reads A's messages past the cut point on the way.
    expect((await decide(a.runId, waitingA)).status).toBe(202);
    await status(a.runId, 'done');
    const before = (await store.load(a.runId))!.checkpoint.messages;
    expect(new Set(before.map((m) => m.id)).size).toBe(before.length);

    // Power loss: everything after the cut point is gone from the disk.
    await redis.kill('SIGKILL');
    await truncate(aof, cut);
    await redis.start();

    // B's client is told that what it was sent is no longer the log, and its stream ends.
    const endedB = await streamB;
    expect(endedB.endedByServer).toBe(true);
    const last = endedB.messages.at(-1)!;
    expect(last.type).toBe('error');
    const told = JSON.parse(last.data) as ErrorBody;
    expect(told.error.code).toBe('event_log_rewound');
    expect((told.error.details as { delivered: number }).delivered).toBe(lastSeqB);
    const endedTreeB = await treeB;
    expect(endedTreeB.endedByServer).toBe(true);
    const toldTree = JSON.parse(endedTreeB.messages.at(-1)!.data) as ErrorBody;
    expect(toldTree.error.code).toBe('event_log_rewound');
    expect(toldTree.error.details).toMatchObject({ runId: b.runId, delivered: lastSeqB });

    // A is back where the cut left it and is driven again: its decision was lost, so it waits
    // (a worker that builds on the messages it kept instead goes straight to an answer).
    const again = await status(a.runId, 'waiting', 'done');
    if (again.status === 'waiting') {
      expect((await decide(a.runId, again)).status).toBe(202);
      await status(a.runId, 'done');
    }

    const after = (await store.load(a.runId))!.checkpoint.messages;
    expect(shape(after)).toEqual(shape(before));
    expect(new Set(after.map((m) => m.id)).size).toBe(after.length);
    const log = eventsOf(await client.stream(`/v1/runs/${a.runId}/events`));
    expect(shapeOfLog(log)).toEqual(shape(after));
    // The thread the next run would read holds each message once.
    const thread = await client.get<ThreadResponse>(`/v1/threads/${a.threadId}`);
    expect(thread.status).toBe(200);
    expect(shape(thread.body.messages)).toEqual(shape(after));
    expect(again.status).toBe('waiting');
  }, 180_000);
});
