/**
 * The RunStore conformance suite's tests of what a store keeps (run-store-conformance.ts registers
 * them): the event log, the messages of a checkpoint, tenant-scoped reads and delete.
 */
import { describe, expect, it } from 'vitest';
import { VersionConflictError, type RunStore } from '@baton/core';
import type { Message, RunEvent } from '@baton/protocol';
import type { ConformanceSuite } from './run-store-conformance-options.ts';
import {
  TENANT,
  bodyOf,
  createdRun,
  delta,
  nextCheckpoint,
  seqs,
  trickyBodies,
  userMessages,
} from './run-store-fixtures.ts';

export function describeStoredContents<S extends RunStore>(suite: ConformanceSuite<S>): void {
  const { opts, open, snapshot, tick } = suite;
  const { readEvents, lastSeq, commitOnBase, tenantReads, deleteRun } = opts;

  describe('event log', () => {
    it('seqs are gapless from 1 across create and commits, and a reader resumes after any seq', async () => {
      const store = await open();
      const run = createdRun();
      const runId = run.checkpoint.identity.runId;
      const all: RunEvent[] = [...(await store.create(run.checkpoint, run.events)).events];
      let cp = run.checkpoint;
      let version = 1;
      for (let i = 1; i <= 8; i += 1) {
        tick(10);
        cp = nextCheckpoint(cp, { status: 'running' });
        // Every third commit has no event: it takes no seq.
        const bodies = i % 3 === 0 ? [] : i % 2 === 0 ? [delta(i, 'x')] : trickyBodies(i);
        const result = await store.commit(runId, version, cp, bodies, null);
        expect(result.version).toBe(version + 1);
        version = result.version;
        all.push(...result.events);
      }
      expect(all.map((e) => e.seq)).toEqual(seqs(1, all.length));
      expect(await readEvents(store, runId)).toEqual(all);
      for (let after = 0; after <= all.length; after += 1)
        expect(await readEvents(store, runId, after)).toEqual(all.slice(after));
      expect(await readEvents(store, runId, all.length + 5)).toEqual([]);
      if (lastSeq) expect(await lastSeq(store, runId)).toBe(all.length);
    });

    it('each run has its own log: seqs of interleaved runs both start at 1', async () => {
      const store = await open();
      const a = createdRun();
      const b = createdRun({ threadId: 'thread-2' });
      await store.create(a.checkpoint, a.events);
      await store.create(b.checkpoint, b.events);
      const commitOne = (run: typeof a, text: string) =>
        store.commit(
          run.checkpoint.identity.runId,
          1,
          nextCheckpoint(run.checkpoint),
          [delta(1, text)],
          null,
        );
      const ca = await commitOne(a, 'a');
      const cb = await commitOne(b, 'b');
      expect(ca.events[0]?.seq).toBe(a.events.length + 1);
      expect(cb.events[0]?.seq).toBe(b.events.length + 1);
      const logB = await readEvents(store, b.checkpoint.identity.runId);
      expect(logB.map((e) => e.seq)).toEqual(seqs(1, b.events.length + 1));
      expect(new Set(logB.map((e) => e.runId))).toEqual(new Set([b.checkpoint.identity.runId]));
      expect(logB.every((e) => e.threadId === 'thread-2')).toBe(true);
    });

    it.skipIf(!opts.guards.eventsReadAreCopies)(
      'events read back are copies: changing them changes no stored event',
      async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        const created = await store.create(run.checkpoint, run.events);
        const read = await readEvents(store, runId);
        for (const event of [...read, ...created.events])
          Object.assign(event, { seq: -1, at: -1, type: 'changed' });
        expect((await readEvents(store, runId)).map((e) => e.seq)).toEqual(
          seqs(1, run.events.length),
        );
        expect((await readEvents(store, runId)).map(bodyOf)).toEqual(run.events);
      },
    );

    it.skipIf(!lastSeq)(
      'lastSeq is the seq of the last event, 0 for a run without events or without a record',
      async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        expect(await lastSeq!(store, runId)).toBe(0);
        await store.create(run.checkpoint, []);
        expect(await lastSeq!(store, runId)).toBe(0);
        await store.commit(runId, 1, nextCheckpoint(run.checkpoint), trickyBodies(1), null);
        expect(await lastSeq!(store, runId)).toBe(trickyBodies(1).length);
      },
    );
  });

  describe('messages', () => {
    it('a checkpoint keeps its messages, in order, as they grow, shrink (a rebase) and grow again', async () => {
      const store = await open();
      const run = createdRun();
      const runId = run.checkpoint.identity.runId;
      await store.create(run.checkpoint, run.events);
      const reply: Message = {
        id: 'a-1',
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c-1', name: 'echo', arguments: {} }],
      };
      const lists: Message[][] = [
        [...run.checkpoint.messages, ...userMessages(0, 3)],
        [...run.checkpoint.messages, ...userMessages(0, 3), reply],
        [reply], // a rebase: not an extension of the stored list
        [],
        userMessages(10, 2),
      ];
      let cp = run.checkpoint;
      for (const [i, messages] of lists.entries()) {
        cp = nextCheckpoint(cp, { messages });
        await store.commit(runId, i + 1, cp, [], null);
        expect((await store.load(runId))?.checkpoint.messages).toEqual(messages);
      }
    });

    it('a run with thousands of messages loads them all', async () => {
      const store = await open();
      const run = createdRun();
      const runId = run.checkpoint.identity.runId;
      const big = nextCheckpoint(run.checkpoint, {
        messages: [...run.checkpoint.messages, ...userMessages(0, 2_500)],
      });
      await store.create(big, run.events);
      expect((await store.load(runId))?.checkpoint).toEqual(big);
      const bigger = nextCheckpoint(big, {
        messages: [...big.messages, ...userMessages(2_500, 1_200)],
      });
      await store.commit(runId, 1, bigger, [], null);
      expect((await store.load(runId))?.checkpoint).toEqual(bigger);
    });

    it.skipIf(!commitOnBase)(
      'a commit told its base stores what a commit without one stores',
      async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        await store.create(run.checkpoint, run.events);
        const grown = nextCheckpoint(run.checkpoint, {
          messages: [...run.checkpoint.messages, ...userMessages(0, 3)],
        });
        await commitOnBase!(store, runId, 1, grown, [delta(1, 'a')], run.checkpoint);
        expect(await store.load(runId)).toEqual({ checkpoint: grown, version: 2 });
        // A base whose messages are not a prefix of the new ones (a rebase).
        const rebased = nextCheckpoint(grown, { messages: userMessages(7, 1) });
        await commitOnBase!(store, runId, 2, rebased, [], grown);
        expect(await store.load(runId)).toEqual({ checkpoint: rebased, version: 3 });
        // A stale commit on a base writes no message either.
        await expect(
          commitOnBase!(store, runId, 2, nextCheckpoint(rebased, { messages: [] }), [], rebased),
        ).rejects.toBeInstanceOf(VersionConflictError);
        expect(await store.load(runId)).toEqual({ checkpoint: rebased, version: 3 });
      },
    );
  });

  describe('tenant scoping', () => {
    it.skipIf(!tenantReads)(
      "a tenant's reads see its runs only; another tenant's run reads as a missing one",
      async () => {
        const store = await open();
        const run = createdRun({ tenantId: 'acme' });
        const runId = run.checkpoint.identity.runId;
        await store.create(run.checkpoint, run.events);
        expect(await tenantReads!.load(store, runId, 'acme')).toEqual({
          checkpoint: run.checkpoint,
          version: 1,
        });
        expect(await tenantReads!.lastSeq(store, runId, 'acme')).toBe(run.events.length);
        for (const [id, tenant] of [
          [runId, 'globex'],
          [runId, ''],
          ['no-such-run', 'acme'],
        ] as const) {
          expect(await tenantReads!.load(store, id, tenant)).toBeNull();
          expect(await tenantReads!.lastSeq(store, id, tenant)).toBeNull();
        }
      },
    );
  });

  describe('delete', () => {
    it.skipIf(!deleteRun)(
      "deletes a finished run of the tenant only: an unfinished or another tenant's run stays",
      async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        await store.create(run.checkpoint, run.events);
        const before = await snapshot(store, runId);
        expect(await deleteRun!(store, runId, TENANT)).toBe('active');
        expect(await snapshot(store, runId)).toEqual(before);

        const done = nextCheckpoint(run.checkpoint, { status: 'done' });
        await store.commit(runId, 1, done, [delta(1, 'end')], 'run_finished');
        const finished = await snapshot(store, runId);
        expect(await deleteRun!(store, runId, 'globex')).toBe('not_found');
        expect(await snapshot(store, runId)).toEqual(finished);

        expect(await deleteRun!(store, runId, TENANT)).toBe('deleted');
        expect(await store.load(runId)).toBeNull();
        expect(await readEvents(store, runId)).toEqual([]);
        if (lastSeq) expect(await lastSeq(store, runId)).toBe(0);
        expect(await deleteRun!(store, runId, TENANT)).toBe('not_found');
        expect(await deleteRun!(store, 'no-such-run', TENANT)).toBe('not_found');

        // Nothing of the deleted run lingers: the id can be created anew, its log from seq 1.
        const again = await store.create(run.checkpoint, run.events);
        expect(again.version).toBe(1);
        expect(again.events.map((e) => e.seq)).toEqual(seqs(1, run.events.length));
        expect(await store.load(runId)).toEqual({ checkpoint: run.checkpoint, version: 1 });
      },
    );
  });
}
