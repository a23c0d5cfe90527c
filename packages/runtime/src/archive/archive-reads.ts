import type { ArchivedRunSummary, RunArchive, StoredCheckpoint } from '@baton/core';
import type { Checkpoint, Message, RunEvent } from '@baton/protocol';
import {
  decodeCursor,
  encodeCursor,
  type ListRunsQuery,
  type RedisRunStore,
  type RunPage,
  type RunSummary,
} from '../redis/redis-run-store.ts';
import type {
  RedisThreadStore,
  ThreadPage,
  ThreadRun,
  ThreadSnapshotForRun,
} from '../redis/thread-store.ts';

export interface ArchiveReadsDeps {
  readonly archive: RunArchive;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
}

/** Newest first: createdAt desc, then runId desc (the order of every run list). */
function newestFirst(a: RunSummary, b: RunSummary): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

/** What a page of a thread asks for (RedisThreadStore.page). */
interface PageAt {
  readonly before: number | null;
  readonly limit: number;
  readonly maxBytes: number;
}

/**
 * The cold half of RunReads: what it asks once Redis has answered that it does not have a run
 * (or to merge with what Redis has: lists, threads). ArchiveReads with ARCHIVE_URL, NoArchive
 * without one (every run Redis let go is gone), so no read has an `if` for the archive.
 */
export interface ColdReads {
  loadRun(tenantId: string, runId: string): Promise<StoredCheckpoint | null>;
  lastSeq(tenantId: string, runId: string): Promise<number | null>;
  /**
   * The events after afterSeq of a run Redis does not have; null when the archive has no such
   * run of this tenant. `known`: the caller has just read this run of this tenant (loadRun), so
   * the archive skips its own existence check (one round trip less).
   */
  readEvents(
    tenantId: string,
    runId: string,
    afterSeq: number,
    known?: boolean,
  ): Promise<RunEvent[] | null>;
  listRuns(query: ListRunsQuery): Promise<RunPage>;
  thread(tenantId: string, threadId: string, hot: ThreadPage, at: PageAt): Promise<ThreadPage>;
  threadForRun(tenantId: string, threadId: string): Promise<ThreadSnapshotForRun>;
  gone(tenantId: string, runId: string): Promise<StoredCheckpoint | 'deleted' | null>;
  deleteRun(cp: Checkpoint): Promise<void>;
  forgetRuns(tenantId: string, runIds: readonly string[]): Promise<void>;
  deleteThread(tenantId: string, threadId: string): Promise<string[]>;
}

/** No archive: Redis is the only store, and what it let go is gone. */
export class NoArchive implements ColdReads {
  private readonly deps: Omit<ArchiveReadsDeps, 'archive'>;

  constructor(deps: Omit<ArchiveReadsDeps, 'archive'>) {
    this.deps = deps;
  }

  loadRun(): Promise<null> {
    return Promise.resolve(null);
  }

  lastSeq(): Promise<null> {
    return Promise.resolve(null);
  }

  readEvents(): Promise<null> {
    return Promise.resolve(null);
  }

  listRuns(query: ListRunsQuery): Promise<RunPage> {
    return this.deps.store.listRuns(query);
  }

  thread(_tenantId: string, _threadId: string, hot: ThreadPage): Promise<ThreadPage> {
    return Promise.resolve(hot);
  }

  threadForRun(tenantId: string, threadId: string): Promise<ThreadSnapshotForRun> {
    return this.deps.threads.loadForRun(tenantId, threadId);
  }

  gone(): Promise<null> {
    return Promise.resolve(null);
  }

  deleteRun(): Promise<void> {
    return Promise.resolve();
  }

  forgetRuns(): Promise<void> {
    return Promise.resolve();
  }

  deleteThread(): Promise<string[]> {
    return Promise.resolve([]);
  }
}

/**
 * RunReads' cold half once an archive is on: Redis while it has a run (the live copy), the
 * archive after. A client cannot tell which answered: the archive stores the checkpoint and
 * events as Redis had them, and reads by tenant, so another tenant's archived run is missing
 * exactly as another tenant's hot one is.
 */
export class ArchiveReads implements ColdReads {
  private readonly deps: ArchiveReadsDeps;

  constructor(deps: ArchiveReadsDeps) {
    this.deps = deps;
  }

  loadRun(tenantId: string, runId: string): Promise<StoredCheckpoint | null> {
    return this.deps.archive.loadRun(tenantId, runId);
  }

  lastSeq(tenantId: string, runId: string): Promise<number | null> {
    return this.deps.archive.lastSeq(tenantId, runId);
  }

  readEvents(
    tenantId: string,
    runId: string,
    afterSeq: number,
    known = false,
  ): Promise<RunEvent[] | null> {
    return this.deps.archive.readEvents(tenantId, runId, afterSeq, known ? { known } : undefined);
  }

  /**
   * One page over both stores: Redis's page and the archive's after the same cursor, merged
   * in the list order without the runs both hold. The first `limit` of the union are the first
   * `limit` of all runs: each of them is among the first `limit` of its own store.
   */
  async listRuns(query: ListRunsQuery): Promise<RunPage> {
    const hot = await this.deps.store.listRuns(query);
    // The archive holds finished runs only.
    if (query.status !== undefined && query.status !== 'done') return hot;
    // Every filter as it came (the rest is the page): one named here by hand was once left out.
    const { cursor, limit, ...filters } = query;
    const after = cursor ? decodeCursor(cursor) : null;
    const cold = await this.deps.archive.listRuns({ ...filters, after, limit: limit + 1 });
    const seen = new Set(hot.runs.map((r) => r.runId));
    const merged = [...hot.runs, ...cold.filter((r: ArchivedRunSummary) => !seen.has(r.runId))];
    merged.sort(newestFirst);
    const runs = merged.slice(0, query.limit);
    const last = runs.at(-1);
    const more = merged.length > query.limit || hot.nextCursor !== null;
    return { runs, nextCursor: more && last ? encodeCursor(last.createdAt, last.runId) : null };
  }

  /**
   * A page of the thread as Redis has it; once Redis forgot it, as the archive has it (the same
   * page of its messages). Its runs are those of both, in one order (createdAt, then runId: the
   * order of either store's), whichever holds each.
   */
  async thread(
    tenantId: string,
    threadId: string,
    hot: ThreadPage,
    at: PageAt,
  ): Promise<ThreadPage> {
    const archived = await this.deps.archive.loadThread(tenantId, threadId);
    if (!archived) return hot;
    const forgotten = hot.runs.length === 0 && hot.activeRunId === null && hot.listLength === 0;
    const runs = mergeRuns(archived.runs, hot.runs);
    return forgotten
      ? {
          ...pageOf(archived.messages, at),
          state: archived.state,
          activeRunId: null,
          queued: [],
          runIds: runs.map((r) => r.runId),
          runs,
        }
      : { ...hot, runIds: runs.map((r) => r.runId), runs };
  }

  /**
   * What a new run of the thread starts from (it holds the thread already): Redis's copy, or,
   * when Redis forgot the thread, the archive's, written back into Redis first so the run and
   * the ones queued behind it read it there.
   */
  async threadForRun(tenantId: string, threadId: string): Promise<ThreadSnapshotForRun> {
    const { threads, archive } = this.deps;
    const hot = await threads.loadForRun(tenantId, threadId);
    // Every finished run left at least its input in the history: an empty one is a new thread
    // or one Redis forgot (other runs may have acquired it since, queued behind this one).
    if (hot.reference.listLength > 0 || Object.keys(hot.state).length > 0) return hot;
    const archived = await archive.loadThread(tenantId, threadId);
    if (!archived) return hot;
    // Seeded here or by a concurrent run first: either way the run references the list as it
    // now is (history-reference.ts), and its turn counts the runs only the archive remembers.
    await threads.seed(tenantId, threadId, archived.messages, archived.state);
    const seeded = await threads.loadForRun(tenantId, threadId);
    return {
      ...seeded,
      runIds: [...archived.runIds.filter((id) => !seeded.runIds.includes(id)), ...seeded.runIds],
    };
  }

  /**
   * What the archive knows of a run Redis does not have: its checkpoint, 'deleted' (a
   * tombstone), or null (never archived).
   */
  async gone(tenantId: string, runId: string): Promise<StoredCheckpoint | 'deleted' | null> {
    const [archived, deleted] = await Promise.all([
      this.deps.archive.loadRun(tenantId, runId),
      this.deps.archive.deleted?.([runId]),
    ]);
    if (archived) return archived;
    return deleted?.has(runId) === true ? 'deleted' : null;
  }

  /** Tombstones the run in the archive (see RunArchive.deleteRun). */
  async deleteRun(cp: Checkpoint): Promise<void> {
    await this.deps.archive.deleteRun(cp.identity.tenantId, cp.identity.runId);
  }

  async forgetRuns(tenantId: string, runIds: readonly string[]): Promise<void> {
    for (const runId of runIds) await this.deps.archive.deleteRun(tenantId, runId);
  }

  deleteThread(tenantId: string, threadId: string): Promise<string[]> {
    return this.deps.archive.deleteThread(tenantId, threadId);
  }
}

/** Both stores' runs of a thread, each once, oldest first (createdAt, then runId). */
function mergeRuns(archived: readonly ThreadRun[], hot: readonly ThreadRun[]): ThreadRun[] {
  const byId = new Map<string, ThreadRun>();
  for (const run of [...archived, ...hot]) byId.set(run.runId, run);
  return [...byId.values()].sort((a, b) =>
    a.createdAt !== b.createdAt
      ? a.createdAt - b.createdAt
      : a.runId < b.runId
        ? -1
        : a.runId > b.runId
          ? 1
          : 0,
  );
}

/** RedisThreadStore.page over an archived thread's messages (their positions: the array's). */
function pageOf(
  messages: readonly Message[],
  at: PageAt,
): Pick<ThreadPage, 'messages' | 'before' | 'listLength'> {
  const end = Math.min(messages.length, at.before ?? messages.length);
  let start = end;
  let bytes = 0;
  while (start > 0 && end - start < at.limit) {
    bytes += Buffer.byteLength(JSON.stringify(messages[start - 1]));
    if (bytes > at.maxBytes && start < end) break;
    start -= 1;
  }
  return {
    messages: messages.slice(start, end),
    before: start > 0 && end > start ? start : null,
    listLength: messages.length,
  };
}
