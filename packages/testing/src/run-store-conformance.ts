/**
 * The RunStore conformance suite: the behaviour every store behind the port (packages/core
 * ports.ts) owes the engine, written once and run against each store (MemoryRunStore in the unit
 * project, RedisRunStore against a real Redis in the integration project), so a difference
 * between them fails a test instead of surfacing as a run that behaves differently in-process.
 *
 * The port itself is create / load / commit. What a store offers beyond it (reading the event
 * log back, last seq, tenant-scoped reads, delete, a commit that knows its base) is handed in as
 * functions of the store; the tests of a feature a store lacks are reported as skipped, so the
 * gap stays visible in every run.
 *
 * Imports vitest: only test files import this module (it is no entry of any shipped package).
 */
import { describe, expect, it } from 'vitest';
import {
  RunDoneError,
  VersionConflictError,
  type CommitResult,
  type RunStore,
  type StoredCheckpoint,
} from '@baton/core';
import type { Checkpoint, EventBody, Message, RunEvent } from '@baton/protocol';
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

export interface RunStoreConformanceOptions<S extends RunStore> {
  /** Names the suite in the report ("RunStore conformance: <name>"). */
  readonly name: string;
  /**
   * A store for one test, sharing nothing with the stores of other tests (a fresh object, a
   * unique key prefix). Every event it appends is stamped with `now()` at the write.
   */
  readonly open: (now: () => number) => S | Promise<S>;
  /** Events of the run with seq > afterSeq, in seq order: how a reader resumes the log. */
  readonly readEvents: (store: S, runId: string, afterSeq?: number) => Promise<readonly RunEvent[]>;
  /** Seq of the run's last event, 0 when it has none or does not exist. */
  readonly lastSeq?: (store: S, runId: string) => Promise<number>;
  /**
   * commit() told the checkpoint it was derived from, so the store may write only what changed
   * (RedisRunStore appends the new messages): what it stores must not depend on it.
   */
  readonly commitOnBase?: (
    store: S,
    runId: string,
    expectedVersion: number,
    checkpoint: Checkpoint,
    events: readonly EventBody[],
    base: Checkpoint,
  ) => Promise<CommitResult>;
  /** Reads that answer null for another tenant's run, as for a missing one (no existence leak). */
  readonly tenantReads?: {
    readonly load: (store: S, runId: string, tenantId: string) => Promise<StoredCheckpoint | null>;
    readonly lastSeq: (store: S, runId: string, tenantId: string) => Promise<number | null>;
  };
  /** Deletes a finished run of the tenant (DELETE /v1/runs/:id). */
  readonly deleteRun?: (
    store: S,
    runId: string,
    tenantId: string,
  ) => Promise<'deleted' | 'not_found' | 'active'>;
  /**
   * Guards beyond the port's promise, which RedisRunStore keeps and MemoryRunStore does not
   * (today): each is a test, reported as skipped for a store that says false.
   */
  readonly guards: {
    /** Every commit to a run that is done is refused (RunDoneError) and changes nothing. */
    readonly finishedRunsTakeNoCommit: boolean;
    /** commit(runId, …) refuses a checkpoint of another run, and changes neither run. */
    readonly checkpointMustNameTheRun: boolean;
    /** Events read back are the reader's own: changing them changes no stored event. */
    readonly eventsReadAreCopies: boolean;
  };
}

/**
 * Registers the suite (call it at a test file's top level). Each test opens its own store and
 * leaves it as it is: a Redis store is expected to live under a prefix no other test uses.
 */
export function runStoreConformance<S extends RunStore>(opts: RunStoreConformanceOptions<S>): void {
  const { readEvents, lastSeq, commitOnBase, tenantReads, deleteRun } = opts;

  describe(`RunStore conformance: ${opts.name}`, () => {
    let clock = 5_000;
    const open = async (): Promise<S> => {
      clock = 5_000;
      return opts.open(() => clock);
    };

    /**
     * The run's checkpoint, version and whole log, to show that a refused write changed none.
     * Cloned: a store that hands out its own objects would otherwise change the "before" too.
     */
    const snapshot = async (store: S, runId: string) =>
      structuredClone({
        stored: await store.load(runId),
        events: await readEvents(store, runId),
        ...(lastSeq ? { lastSeq: await lastSeq(store, runId) } : {}),
      });

    describe('create and load', () => {
      it('create answers version 1 and the creation events, sequenced from 1 with their envelope', async () => {
        const store = await open();
        const run = createdRun();
        const id = run.checkpoint.identity;
        const created = await store.create(run.checkpoint, run.events);
        expect(created.version).toBe(1);
        expect(run.events.length).toBeGreaterThan(0);
        expect(created.events).toEqual(
          run.events.map((body, i) => ({
            seq: i + 1,
            runId: id.runId,
            threadId: id.threadId,
            turnId: id.turnId,
            at: 5_000,
            ...body,
          })),
        );
        // Envelope first, body after: readers (and the SSE wire) see one key order everywhere.
        for (const event of created.events)
          expect(Object.keys(event).slice(0, 5)).toEqual([
            'seq',
            'runId',
            'threadId',
            'turnId',
            'at',
          ]);
        expect(await readEvents(store, id.runId)).toEqual(created.events);
        expect(await store.load(id.runId)).toEqual({ checkpoint: run.checkpoint, version: 1 });
      });

      it('load of a run that does not exist is null, and its log is empty', async () => {
        const store = await open();
        expect(await store.load('no-such-run')).toBeNull();
        expect(await readEvents(store, 'no-such-run')).toEqual([]);
      });

      it('create with no events stores the run and sequences nothing', async () => {
        const store = await open();
        const run = createdRun();
        const created = await store.create(run.checkpoint, []);
        expect(created).toEqual({ version: 1, events: [] });
        expect((await store.load(run.checkpoint.identity.runId))?.version).toBe(1);
        expect(await readEvents(store, run.checkpoint.identity.runId)).toEqual([]);
      });

      it('create of a run that exists is refused with VersionConflictError and changes nothing', async () => {
        // Not an upsert: a second creator (a resubmitted request with the same run id) must not
        // reset a run that may have moved on. A create the store itself ran and a dropped
        // connection made the client send again is another matter (RedisRunStore recognises
        // it: lost-replies.test.ts).
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        await store.create(run.checkpoint, run.events);
        await store.commit(runId, 1, nextCheckpoint(run.checkpoint), [delta(1, 'a')], null);
        const before = await snapshot(store, runId);
        clock += 1;
        await expect(store.create(run.checkpoint, run.events)).rejects.toBeInstanceOf(
          VersionConflictError,
        );
        expect(await snapshot(store, runId)).toEqual(before);
      });

      it('what load returns is a copy: changing it, or the object committed, changes no stored run', async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        const cp = structuredClone(run.checkpoint);
        await store.create(cp, run.events);
        cp.messages.push({ id: 'late', role: 'user', content: 'changed after create' });
        const loaded = await store.load(runId);
        expect(loaded?.checkpoint).toEqual(run.checkpoint);
        loaded?.checkpoint.messages.push({ id: 'x', role: 'user', content: 'changed after load' });
        expect((await store.load(runId))?.checkpoint).toEqual(run.checkpoint);
      });
    });

    describe('compare-and-set commit', () => {
      it('a commit on the stored version stores the checkpoint as version + 1 and appends its events', async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        const id = run.checkpoint.identity;
        await store.create(run.checkpoint, run.events);
        const cp2 = nextCheckpoint(run.checkpoint, { status: 'running' });
        clock = 6_000;
        const result = await store.commit(runId, 1, cp2, trickyBodies(1), 'run_start_replay');
        expect(result.version).toBe(2);
        expect([...result.events]).toEqual(
          trickyBodies(1).map((body, i) => ({
            seq: run.events.length + 1 + i,
            runId: id.runId,
            threadId: id.threadId,
            turnId: id.turnId,
            at: 6_000,
            ...body,
          })),
        );
        expect(await store.load(runId)).toEqual({ checkpoint: cp2, version: 2 });
        expect(await readEvents(store, runId, run.events.length)).toEqual([...result.events]);
        // Bodies come back as they went in: no {} for [] nor [] for {}, escapes kept.
        expect(result.events.map(bodyOf)).toEqual(trickyBodies(1));
      });

      it('a commit with a stale version is refused with VersionConflictError and changes nothing', async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        await store.create(run.checkpoint, run.events);
        const cp2 = nextCheckpoint(run.checkpoint, { status: 'running' });
        await store.commit(runId, 1, cp2, [delta(1, 'a')], 'run_start_replay');
        const before = await snapshot(store, runId);
        for (const stale of [1, 0, 3, 99])
          await expect(
            store.commit(
              runId,
              stale,
              nextCheckpoint(cp2, { status: 'done' }),
              [delta(2, 'b')],
              'assistant_turn_committed',
            ),
          ).rejects.toBeInstanceOf(VersionConflictError);
        expect(await snapshot(store, runId)).toEqual(before);

        // A refused commit consumes no seq: the next one continues the log without a gap.
        const next = await store.commit(runId, 2, nextCheckpoint(cp2), [delta(2, 'c')], null);
        expect(next.version).toBe(3);
        expect(next.events.map((e) => e.seq)).toEqual([before.events.length + 1]);
      });

      it('a commit to a run that does not exist is refused with VersionConflictError and creates nothing', async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        await expect(
          store.commit(runId, 1, nextCheckpoint(run.checkpoint), [delta(1, 'a')], null),
        ).rejects.toBeInstanceOf(VersionConflictError);
        expect(await store.load(runId)).toBeNull();
        expect(await readEvents(store, runId)).toEqual([]);
        if (lastSeq) expect(await lastSeq(store, runId)).toBe(0);
      });

      it('exactly one of 10 concurrent commits on the same version wins; the others change nothing', async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        await store.create(run.checkpoint, run.events);
        const settled = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) =>
            store.commit(
              runId,
              1,
              { ...nextCheckpoint(run.checkpoint), step: 100 + i },
              [delta(i, `r${i}`)],
              'assistant_turn_committed',
            ),
          ),
        );
        const won = settled.flatMap((s, i) => (s.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        for (const s of settled)
          if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(VersionConflictError);
        const loaded = await store.load(runId);
        expect(loaded?.version).toBe(2);
        expect(loaded?.checkpoint.step).toBe(100 + won[0]!);
        const events = await readEvents(store, runId);
        expect(events.map((e) => e.seq)).toEqual(seqs(1, run.events.length + 1));
        expect(events.at(-1)).toMatchObject({ type: 'text.delta', delta: `r${won[0]}` });
      });

      it.skipIf(!opts.guards.finishedRunsTakeNoCommit)(
        'a run that is done takes no commit at all (RunDoneError), whatever the version',
        async () => {
          const store = await open();
          const run = createdRun();
          const runId = run.checkpoint.identity.runId;
          await store.create(run.checkpoint, run.events);
          const done = nextCheckpoint(run.checkpoint, { status: 'done' });
          await store.commit(runId, 1, done, [delta(1, 'end')], 'run_finished');
          const before = await snapshot(store, runId);
          await expect(
            store.commit(runId, 2, nextCheckpoint(done, { status: 'running' }), [], null),
          ).rejects.toBeInstanceOf(RunDoneError);
          expect(await snapshot(store, runId)).toEqual(before);
        },
      );

      it.skipIf(!opts.guards.checkpointMustNameTheRun)(
        "a commit of another run's checkpoint is refused and changes neither run",
        async () => {
          const store = await open();
          const a = createdRun();
          const b = createdRun();
          const [idA, idB] = [a.checkpoint.identity.runId, b.checkpoint.identity.runId];
          await store.create(a.checkpoint, a.events);
          await store.create(b.checkpoint, b.events);
          const before = [await snapshot(store, idA), await snapshot(store, idB)];
          await expect(
            store.commit(idA, 1, nextCheckpoint(b.checkpoint), [delta(1, 'x')], null),
          ).rejects.toThrow();
          expect([await snapshot(store, idA), await snapshot(store, idB)]).toEqual(before);
        },
      );
    });

    describe('event log', () => {
      it('seqs are gapless from 1 across create and commits, and a reader resumes after any seq', async () => {
        const store = await open();
        const run = createdRun();
        const runId = run.checkpoint.identity.runId;
        const all: RunEvent[] = [...(await store.create(run.checkpoint, run.events)).events];
        let cp = run.checkpoint;
        let version = 1;
        for (let i = 1; i <= 8; i += 1) {
          clock += 10;
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
  });
}
