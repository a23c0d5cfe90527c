/**
 * The RunArchive conformance suite (packages/core ports.ts): what every archive behind the port
 * owes the API's read-through, written once and run against each archive (PgArchive against a
 * real PostgreSQL in the integration project). Shaped like run-store-conformance.ts: `open` gives
 * a fresh, empty archive per test.
 *
 * Imports vitest: only test files import this module.
 */
import { describe, expect, it } from 'vitest';
import type { ArchivedRun, RunArchive } from '@baton/core';
import type { Checkpoint, Message, RunEvent } from '@baton/protocol';
import { TENANT, createdRun, trickyBodies, userMessages } from './run-store-fixtures.ts';

export interface ArchiveConformanceOptions {
  readonly name: string;
  readonly open: () => Promise<RunArchive>;
}

const OTHER_TENANT = 'tenant-b';

/** A finished run of `threadId`: `history` messages from its thread, then `own` of its own. */
function finishedRun(
  opts: {
    tenantId?: string;
    threadId?: string;
    agent?: string;
    createdAt?: number;
    history?: readonly Message[];
    own?: readonly Message[];
    events?: number;
    state?: Record<string, string>;
  } = {},
): ArchivedRun {
  const createdAt = opts.createdAt ?? 1_000;
  const { checkpoint: created } = createdRun(
    {
      tenantId: opts.tenantId ?? TENANT,
      threadId: opts.threadId ?? `thread-${globalThis.crypto.randomUUID()}`,
      agent: opts.agent ?? 'conformance-agent',
    },
    createdAt,
  );
  const history = opts.history ?? [];
  const own = opts.own ?? userMessages(createdAt, 2);
  const checkpoint: Checkpoint = {
    ...created,
    status: 'done',
    messages: [...history, ...own],
    historyLength: history.length,
    termination: { kind: 'natural_end' },
    updatedAt: createdAt + 10,
    finishedAt: createdAt + 10,
    state: { run: {}, thread: opts.state ?? {} },
  };
  const { runId, threadId, turnId } = checkpoint.identity;
  const bodies = [...trickyBodies(1), ...trickyBodies(2)].slice(0, opts.events ?? 5);
  const events: RunEvent[] = bodies.map((body, i) => ({
    seq: i + 1,
    runId,
    threadId,
    turnId,
    at: createdAt + i,
    ...body,
  }));
  return { checkpoint, version: 7, events, threadState: opts.state ?? {}, addsToThread: true };
}

export function archiveConformance(opts: ArchiveConformanceOptions): void {
  describe(`RunArchive conformance: ${opts.name}`, () => {
    it('reads back a run, its version and its events exactly as written', async () => {
      const archive = await opts.open();
      const run = finishedRun({ events: 6 });
      await archive.putRuns([run]);
      const { runId, tenantId } = run.checkpoint.identity;
      const loaded = await archive.loadRun(tenantId, runId);
      expect(loaded).toEqual({ checkpoint: run.checkpoint, version: run.version });
      // Same text, key order included: a body read from the archive is the body seen live.
      expect(JSON.stringify(loaded?.checkpoint)).toBe(JSON.stringify(run.checkpoint));
      const events = await archive.readEvents(tenantId, runId);
      expect(events?.map((e) => JSON.stringify(e))).toEqual(
        run.events.map((e) => JSON.stringify(e)),
      );
      expect(await archive.readEvents(tenantId, runId, 4)).toEqual(run.events.slice(4));
      expect(await archive.lastSeq(tenantId, runId)).toBe(6);
      expect(await archive.holds([runId, 'nope'])).toEqual(new Set([runId]));
    });

    it("another tenant's run reads as a missing one", async () => {
      const archive = await opts.open();
      const run = finishedRun();
      await archive.putRuns([run]);
      const { runId } = run.checkpoint.identity;
      expect(await archive.loadRun(OTHER_TENANT, runId)).toBeNull();
      expect(await archive.loadRun(OTHER_TENANT, 'missing')).toBeNull();
      expect(await archive.lastSeq(OTHER_TENANT, runId)).toBeNull();
      expect(await archive.readEvents(OTHER_TENANT, runId)).toBeNull();
      expect(await archive.listRuns({ tenantId: OTHER_TENANT, limit: 10 })).toEqual([]);
      expect(await archive.loadThread(OTHER_TENANT, run.checkpoint.identity.threadId)).toBeNull();
      expect(await archive.deleteRun(OTHER_TENANT, runId)).toBe(false);
      expect(await archive.lastSeq(TENANT, runId)).toBe(run.events.length);
    });

    it('a run offered twice (or in two batches at once) is stored once', async () => {
      const archive = await opts.open();
      const a = finishedRun({ events: 3 });
      const b = finishedRun({ events: 4 });
      await archive.putRuns([a]);
      await Promise.all([archive.putRuns([a, b]), archive.putRuns([b, a])]);
      const { tenantId } = a.checkpoint.identity;
      expect(await archive.readEvents(tenantId, a.checkpoint.identity.runId)).toEqual(a.events);
      expect(await archive.readEvents(tenantId, b.checkpoint.identity.runId)).toEqual(b.events);
      expect((await archive.listRuns({ tenantId, limit: 10 })).length).toBe(2);
      const thread = await archive.loadThread(tenantId, a.checkpoint.identity.threadId);
      expect(thread?.messages).toEqual(a.checkpoint.messages.slice(a.checkpoint.historyLength));
    });

    it('lists newest first with filters, paging strictly after a position', async () => {
      const archive = await opts.open();
      const threadId = `thread-${globalThis.crypto.randomUUID()}`;
      const runs = [
        finishedRun({ createdAt: 100, agent: 'x', threadId }),
        finishedRun({ createdAt: 200, agent: 'y' }),
        finishedRun({ createdAt: 200, agent: 'x', threadId }),
        finishedRun({ createdAt: 300, agent: 'y' }),
        finishedRun({ createdAt: 50, tenantId: OTHER_TENANT }),
      ];
      await archive.putRuns(runs);
      const order = runs
        .slice(0, 4)
        .map((r) => ({ id: r.checkpoint.identity.runId, at: r.checkpoint.createdAt, r }))
        .sort((p, q) => q.at - p.at || (q.id < p.id ? -1 : q.id > p.id ? 1 : 0));
      const all = await archive.listRuns({ tenantId: TENANT, limit: 10 });
      expect(all.map((s) => s.runId)).toEqual(order.map((o) => o.id));
      expect(all[0]).toEqual({
        runId: order[0]!.id,
        tenantId: TENANT,
        agent: 'y',
        threadId: order[0]!.r.checkpoint.identity.threadId,
        status: 'done',
        createdAt: 300,
        updatedAt: 310,
      });
      // Pages of one: every run once, in order, through a tie on createdAt.
      const paged: string[] = [];
      let after: { createdAt: number; runId: string } | null = null;
      for (;;) {
        const page = await archive.listRuns({ tenantId: TENANT, limit: 1, after });
        if (page.length === 0) break;
        paged.push(page[0]!.runId);
        after = { createdAt: page[0]!.createdAt, runId: page[0]!.runId };
      }
      expect(paged).toEqual(order.map((o) => o.id));
      const xs = await archive.listRuns({ tenantId: TENANT, agent: 'x', limit: 10 });
      expect(xs.map((s) => s.agent)).toEqual(['x', 'x']);
      const inThread = await archive.listRuns({ tenantId: TENANT, threadId, limit: 10 });
      expect(inThread.map((s) => s.createdAt)).toEqual([200, 100]);
      expect(await archive.listRuns({ tenantId: TENANT, status: 'running', limit: 10 })).toEqual(
        [],
      );
      // By id (a schedule's runs): the tenant's only, each as the list shows it.
      const ids = runs.map((r) => r.checkpoint.identity.runId);
      const byId = await archive.summaries(TENANT, [...ids, 'no-such-run']);
      expect(byId.map((r) => r.runId).sort()).toEqual(ids.slice(0, 4).sort());
      expect(byId.find((r) => r.runId === order[0]!.id)).toEqual(all[0]);
      expect(await archive.summaries(TENANT, [])).toEqual([]);
    });

    it('lists by fairness key: the one a run named, else its tenant', async () => {
      const archive = await opts.open();
      const named = (createdAt: number, fairnessKey: string | undefined): ArchivedRun => {
        const run = finishedRun({ createdAt });
        const identity = { ...run.checkpoint.identity };
        if (fairnessKey !== undefined) identity.fairnessKey = fairnessKey;
        return { ...run, checkpoint: { ...run.checkpoint, identity } };
      };
      const runs = [named(100, 'user-1'), named(200, undefined), named(300, 'user-1')];
      await archive.putRuns([...runs, named(400, 'user-2')]);
      const keyed = (fairnessKey: string) =>
        archive.listRuns({ tenantId: TENANT, fairnessKey, limit: 10 });
      expect((await keyed('user-1')).map((r) => r.createdAt)).toEqual([300, 100]);
      expect((await keyed(TENANT)).map((r) => r.createdAt)).toEqual([200]);
      expect(await keyed('nobody')).toEqual([]);
    });

    it("a thread is its runs' own messages in the order they finished, with the last state", async () => {
      const archive = await opts.open();
      const threadId = `thread-${globalThis.crypto.randomUUID()}`;
      const first = finishedRun({
        threadId,
        createdAt: 100,
        own: userMessages(1, 2),
        state: { n: '1' },
      });
      const second = finishedRun({
        threadId,
        createdAt: 200,
        history: userMessages(1, 2),
        own: userMessages(3, 3),
        state: { n: '2' },
      });
      // Offered out of order: the order is the runs', not the archiver's.
      await archive.putRuns([second]);
      await archive.putRuns([first]);
      const thread = await archive.loadThread(TENANT, threadId);
      expect(thread).toEqual({
        messages: userMessages(1, 5),
        state: { n: '2' },
        runIds: [first.checkpoint.identity.runId, second.checkpoint.identity.runId],
        runs: [
          { runId: first.checkpoint.identity.runId, createdAt: 100 },
          { runId: second.checkpoint.identity.runId, createdAt: 200 },
        ],
      });
    });

    it('a run that did not add to its thread (a child that inherited it) adds no message', async () => {
      const archive = await opts.open();
      const threadId = `thread-${globalThis.crypto.randomUUID()}`;
      const parent = finishedRun({ threadId, createdAt: 100, own: userMessages(1, 2) });
      const child = {
        ...finishedRun({ threadId, createdAt: 150, own: userMessages(9, 1) }),
        addsToThread: false,
      };
      await archive.putRuns([parent, child]);
      const thread = await archive.loadThread(TENANT, threadId);
      expect(thread?.messages).toEqual(userMessages(1, 2));
      expect(thread?.runIds).toEqual([
        parent.checkpoint.identity.runId,
        child.checkpoint.identity.runId,
      ]);
      expect(await archive.readEvents(TENANT, child.checkpoint.identity.runId)).toEqual(
        child.events,
      );
    });

    it('a deleted run is gone for good: reads, lists, its thread, and a later put', async () => {
      const archive = await opts.open();
      const threadId = `thread-${globalThis.crypto.randomUUID()}`;
      const keep = finishedRun({ threadId, createdAt: 100, own: userMessages(1, 1) });
      const gone = finishedRun({
        threadId,
        createdAt: 200,
        history: userMessages(1, 1),
        own: userMessages(2, 1),
      });
      await archive.putRuns([keep, gone]);
      const { runId } = gone.checkpoint.identity;
      expect(await archive.deleteRun(TENANT, runId)).toBe(true);
      expect(await archive.deleteRun(TENANT, runId)).toBe(false);
      // An archiver that read the run before the delete offers it again: it stays deleted.
      await archive.putRuns([gone]);
      expect(await archive.loadRun(TENANT, runId)).toBeNull();
      expect(await archive.readEvents(TENANT, runId)).toBeNull();
      expect((await archive.loadThread(TENANT, threadId))?.messages).toEqual(userMessages(1, 1));
      expect(await archive.deleteThread(TENANT, threadId)).toEqual([
        keep.checkpoint.identity.runId,
      ]);
      expect(await archive.loadThread(TENANT, threadId)).toBeNull();
      await archive.putRuns([keep]);
      expect(await archive.listRuns({ tenantId: TENANT, threadId, limit: 10 })).toEqual([]);
      // Both left a tombstone (a create resent under a deleted run's id is refused, not re-run).
      const never = `run-${globalThis.crypto.randomUUID()}`;
      if (archive.deleted)
        expect(await archive.deleted([runId, keep.checkpoint.identity.runId, never])).toEqual(
          new Set([runId, keep.checkpoint.identity.runId]),
        );
    });
  });
}
