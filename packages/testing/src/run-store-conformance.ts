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
import { RunDoneError, VersionConflictError, type RunStore } from '@baton/core';
import { describeStoredContents } from './run-store-conformance-contents.ts';
import type { RunStoreConformanceOptions } from './run-store-conformance-options.ts';
import {
  createdRun,
  delta,
  nextCheckpoint,
  seqs,
  trickyBodies,
  bodyOf,
} from './run-store-fixtures.ts';

export type { RunStoreConformanceOptions };

/**
 * Registers the suite (call it at a test file's top level). Each test opens its own store and
 * leaves it as it is: a Redis store is expected to live under a prefix no other test uses.
 */
export function runStoreConformance<S extends RunStore>(opts: RunStoreConformanceOptions<S>): void {
  const { readEvents, lastSeq } = opts;

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

    describeStoredContents({ opts, open, snapshot, tick: (ms) => (clock += ms) });
  });
}
