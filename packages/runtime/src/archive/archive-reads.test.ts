import { describe, expect, it } from 'vitest';
import type { ArchivedThread, RunArchive } from '@baton/core';
import type { Message } from '@baton/protocol';
import { ArchiveReads } from './archive-reads.ts';
import type { RedisRunStore } from '../run-record/redis-run-store.ts';
import type { RedisThreadStore, ThreadPage } from '../redis/thread-store.ts';

const user = (id: string): Message => ({ id, role: 'user', content: id });

/** ArchiveReads over an archive that holds `thread` (thread reads touch nothing else). */
function reads(thread: ArchivedThread | null): ArchiveReads {
  const archive = { loadThread: () => Promise.resolve(thread) } as unknown as RunArchive;
  return new ArchiveReads({
    archive,
    store: {} as RedisRunStore,
    threads: {} as RedisThreadStore,
  });
}

function hotPage(runs: { runId: string; createdAt: number }[], listLength: number): ThreadPage {
  return {
    messages: [],
    state: {},
    activeRunId: null,
    queued: [],
    runIds: runs.map((r) => r.runId),
    runs,
    before: null,
    listLength,
  };
}

const at = { before: null, limit: 100, maxBytes: 1_000_000 };

describe('ArchiveReads.thread (issue 32 item 15)', () => {
  it("lists a thread's runs in creation order whichever store holds each", async () => {
    // r1 is still in Redis (its archive write pending); r2 is only in the archive (Redis let it
    // go); r3 is in both.
    const archived: ArchivedThread = {
      messages: [user('m1')],
      state: {},
      runIds: ['r2', 'r3'],
      runs: [
        { runId: 'r2', createdAt: 2 },
        { runId: 'r3', createdAt: 3 },
      ],
    };
    const hot = hotPage(
      [
        { runId: 'r1', createdAt: 1 },
        { runId: 'r3', createdAt: 3 },
      ],
      3,
    );
    const page = await reads(archived).thread('t', 'th', hot, at);
    expect(page.runIds).toEqual(['r1', 'r2', 'r3']);
    expect(page.runs.map((r) => r.createdAt)).toEqual([1, 2, 3]);
    // the same createdAt: by run id, as both stores order them
    const tied = await reads({
      ...archived,
      runIds: ['b'],
      runs: [{ runId: 'b', createdAt: 5 }],
    }).thread('t', 'th', hotPage([{ runId: 'a', createdAt: 5 }], 1), at);
    expect(tied.runIds).toEqual(['a', 'b']);
  });

  it("pages a thread Redis forgot over the archive's messages, as Redis would", async () => {
    const messages = Array.from({ length: 5 }, (_, i) => user(`m${String(i)}`));
    const archived: ArchivedThread = {
      messages,
      state: { k: 1 },
      runIds: ['r1'],
      runs: [{ runId: 'r1', createdAt: 1 }],
    };
    const forgotten = hotPage([], 0);
    const p1 = await reads(archived).thread('t', 'th', forgotten, { ...at, limit: 2 });
    expect(p1.messages.map((m) => m.id)).toEqual(['m3', 'm4']);
    expect(p1.before).toBe(3);
    expect(p1.state).toEqual({ k: 1 });
    const p2 = await reads(archived).thread('t', 'th', forgotten, { ...at, before: 1, limit: 2 });
    expect(p2.messages.map((m) => m.id)).toEqual(['m0']);
    expect(p2.before).toBeNull();
  });
});
