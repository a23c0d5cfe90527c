import type { RunEvent } from '@baton/protocol';
import type { Request, Response } from 'express';
import { BatonError } from '@baton/core';
import type { ApiContext } from '../context.ts';
import { formatFrame, rewoundFrame } from '../sse.ts';
import { MAX_BUFFERED_BYTES, openSseConnection } from '../sse-connection.ts';

const MAX_TRACKED_RUNS = 1_000;

/**
 * One cursor over several logs. A run tree's events are numbered per run, so the stream's
 * `id:` is a composite cursor: the root's seq, then `;<suffix>=<seq>` for each descendant seen,
 * where the suffix is the descendant's run id without the root's id and its dot (child run ids
 * extend their parent's: `<root>.s1c0`, `<root>.s1c0.s2c1`). A descendant enters the cursor (at
 * 0) with the `child_run.linked` event that names it, so a reconnect resumes every log where
 * the client stopped: no loss, no duplicate, per run in order.
 */
export type TreeCursor = Map<string, number>;

export function parseTreeCursor(rootId: string, value: string | undefined): TreeCursor {
  const cursor: TreeCursor = new Map([[rootId, 0]]);
  if (value === undefined || value.trim() === '') return cursor;
  const [head, ...rest] = value.trim().split(';');
  const bad = (): never => {
    throw new BatonError(
      'bad_request',
      'Last-Event-ID of a children=1 stream must be the id of an event it sent (<seq>;<child>=<seq>…)',
    );
  };
  if (head === undefined || !/^\d{1,15}$/.test(head)) bad();
  cursor.set(rootId, Number(head));
  for (const part of rest) {
    const match = /^([A-Za-z0-9._:-]{1,120})=(\d{1,15})$/.exec(part);
    if (!match?.[1] || !match[2] || cursor.size >= MAX_TRACKED_RUNS) bad();
    cursor.set(`${rootId}.${match![1]}`, Number(match![2]));
  }
  return cursor;
}

export function formatTreeCursor(rootId: string, cursor: TreeCursor): string {
  const parts = [String(cursor.get(rootId) ?? 0)];
  for (const [runId, seq] of cursor)
    if (runId !== rootId) parts.push(`${runId.slice(rootId.length + 1)}=${String(seq)}`);
  return parts.join(';');
}

/**
 * GET /v1/runs/:id/events?children=1: the run's events and its descendants' (each event's
 * envelope `runId` says whose), merged as they come, with a composite cursor as the SSE id.
 * Ends when the root is done and every descendant it linked is done (or never came to be).
 */
export async function streamRunTree(
  ctx: ApiContext,
  req: Request,
  res: Response,
  tenantId: string,
  rootId: string,
  query: { after?: number | undefined; until?: string | undefined },
): Promise<void> {
  if (query.until === 'suspended')
    throw new BatonError(
      'bad_request',
      'until=suspended cannot be combined with children=1: a tree stream follows the run until it is done',
    );
  const header = req.headers['last-event-id'];
  const cursor = parseTreeCursor(
    rootId,
    typeof header === 'string'
      ? header
      : query.after === undefined
        ? undefined
        : String(query.after),
  );
  for (const runId of [...cursor.keys()]) {
    if (runId === rootId) continue;
    // A descendant without keys stays followed: it may be linked and not created yet (its
    // parent's commit names it before a worker creates it), and dropping it would lose its whole
    // log, since the event that linked it is behind the cursor and never comes again. One whose
    // keys are gone (retention) or that never comes to be sends nothing; settle() ends it once
    // the root is done. Only a run of another tenant is dropped (ids extend the root's, so none
    // should be).
    if ((await ctx.service.follow(tenantId, runId)) === 'hidden') cursor.delete(runId);
  }
  const conn = await openSseConnection(ctx, res, tenantId);
  const { stream, finish } = conn;
  const ended = new Set<string>();
  stream.comment(`run tree ${rootId} after ${formatTreeCursor(rootId, cursor)}`);

  /** Every tracked run has ended (seen, or done in the store with nothing left to send, or absent). */
  const settle = async (): Promise<void> => {
    for (const [runId, seq] of cursor) {
      if (ended.has(runId)) continue;
      const state = await ctx.service.follow(tenantId, runId);
      if (typeof state === 'object' && (state.status !== 'done' || seq < state.lastSeq)) return;
      // A linked child that was never created (its agent is unknown, its parent ended first).
      if (state === 'absent' && runId === rootId) return;
      ended.add(runId);
    }
    finish();
  };

  const follow = async (runId: string): Promise<void> => {
    const after = cursor.get(runId) ?? 0;
    const onEvent = (event: RunEvent): void => {
      if (conn.finished) return;
      cursor.set(runId, event.seq);
      const linked = event.type === 'child_run.linked' ? event.link.childRunId : null;
      const discovered = linked !== null && !cursor.has(linked) && cursor.size < MAX_TRACKED_RUNS;
      if (discovered) cursor.set(linked, 0);
      stream.write(
        formatFrame({
          id: formatTreeCursor(rootId, cursor),
          event: event.type,
          data: JSON.stringify(event),
        }),
      );
      if (discovered) void follow(linked).catch((err: unknown) => fail(err, linked));
      if (event.type === 'run.finished' && event.status === 'done') {
        ended.add(runId);
        void settle().catch((err: unknown) => fail(err, runId));
      }
      if (res.writableLength > MAX_BUFFERED_BYTES) finish();
    };
    // A run only the archive still has: its log is all there is, nothing comes live.
    const opened = await ctx.service.openEvents(tenantId, runId, after);
    if (opened.archived) {
      for (const event of opened.events) onEvent(event);
      return;
    }
    const unsubscribe = await opened.follow({
      onEvent,
      // What this stream sent of that run is no longer its log: say so and end, as the flat
      // stream does; the details name the run, since a tree stream follows several.
      onRewound: (rewound) => {
        if (conn.finished) return;
        stream.write(rewoundFrame({ ...rewound, runId }));
        finish();
      },
    });
    await conn.adopt(unsubscribe);
  };
  const fail = (error: unknown, runId: string): void => {
    req.log.warn({ err: error, runId }, 'run tree subscription failed');
    finish();
  };
  try {
    for (const runId of [...cursor.keys()]) await follow(runId);
    await settle();
  } catch (error) {
    fail(error, rootId);
  }
}
