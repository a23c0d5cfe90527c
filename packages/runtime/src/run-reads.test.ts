import { describe, expect, it } from 'vitest';
import type { RunArchive, StoredCheckpoint } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import { RunReads } from './run-reads.ts';
import type { RedisRunStore } from './redis/redis-run-store.ts';
import type { RedisThreadStore } from './redis/thread-store.ts';
import type { RunEventSubscriber } from './redis/event-subscriber.ts';
import { RunNotFoundError } from './errors/run-not-found-error.ts';

const stored = { checkpoint: { identity: { runId: 'r1' } }, version: 3 } as StoredCheckpoint;
const event = { seq: 1, type: 'run.created' } as RunEvent;

/** A Redis run store holding `hot` (runId -> tenant), recording what it was asked. */
function hotStore(hot: Record<string, string>, calls: string[]): RedisRunStore {
  return {
    loadForTenant: (runId: string, tenantId: string) => {
      calls.push(`loadForTenant ${runId}`);
      return Promise.resolve(hot[runId] === tenantId ? stored : null);
    },
    readEvents: (runId: string) => {
      calls.push(`readEvents ${runId}`);
      return Promise.resolve([event]);
    },
    lastSeqForTenant: (runId: string, tenantId: string) => {
      calls.push(`lastSeqForTenant ${runId}`);
      return Promise.resolve(hot[runId] === tenantId ? 1 : null);
    },
    progress: (runId: string) => {
      calls.push(`progress ${runId}`);
      const tenantId = hot[runId];
      return Promise.resolve(tenantId ? { tenantId, status: 'running', lastSeq: 1 } : null);
    },
  } as unknown as RedisRunStore;
}

/** An archive holding r1 of tenant-a, recording what it was asked. */
function archive(calls: string[]): RunArchive {
  const mine = (tenantId: string, runId: string): boolean =>
    tenantId === 'tenant-a' && runId === 'r1';
  return {
    loadRun: (tenantId: string, runId: string) => {
      calls.push(`archive.loadRun ${runId}`);
      return Promise.resolve(mine(tenantId, runId) ? stored : null);
    },
    lastSeq: (tenantId: string, runId: string) => {
      calls.push(`archive.lastSeq ${runId}`);
      return Promise.resolve(mine(tenantId, runId) ? 1 : null);
    },
    readEvents: (tenantId: string, runId: string, afterSeq = 0, opts?: { known?: boolean }) => {
      calls.push(
        `archive.readEvents ${runId} after ${String(afterSeq)}${opts?.known ? ' known' : ''}`,
      );
      return Promise.resolve(mine(tenantId, runId) ? [event] : null);
    },
  } as unknown as RunArchive;
}

function reads(opts: { hot?: Record<string, string>; archived?: boolean; calls: string[] }) {
  const subscriber = {
    subscribe: (runId: string) => {
      opts.calls.push(`subscribe ${runId}`);
      return Promise.resolve(() => Promise.resolve());
    },
  } as unknown as RunEventSubscriber;
  return new RunReads({
    store: hotStore(opts.hot ?? {}, opts.calls),
    threads: {} as RedisThreadStore,
    archive: opts.archived === false ? undefined : archive(opts.calls),
    subscriber: () => subscriber,
  });
}

const handlers = { onEvent: () => undefined, onRewound: () => undefined };

describe('RunReads (the read seam, issue 33)', () => {
  it('reads a run only the archive has with one Redis read and two archive reads', async () => {
    const calls: string[] = [];
    const loaded = await reads({ calls }).loadWithEvents('tenant-a', 'r1');
    expect(loaded.events).toEqual([event]);
    expect(calls).toEqual([
      'loadForTenant r1',
      'archive.loadRun r1',
      'archive.readEvents r1 after 0 known',
    ]);
  });

  it('reads a run Redis has from Redis alone', async () => {
    const calls: string[] = [];
    await reads({ calls, hot: { r1: 'tenant-a' } }).loadWithEvents('tenant-a', 'r1');
    expect(calls).toEqual(['loadForTenant r1', 'readEvents r1']);
  });

  it('without an archive a run Redis does not have is missing, and nothing else is asked', async () => {
    const calls: string[] = [];
    await expect(reads({ calls, archived: false }).load('tenant-a', 'r1')).rejects.toBeInstanceOf(
      RunNotFoundError,
    );
    expect(calls).toEqual(['loadForTenant r1']);
  });

  it("openEvents replays an archived run, follows a live one, refuses another tenant's", async () => {
    const calls: string[] = [];
    const r = reads({ calls, hot: { r2: 'tenant-a', r3: 'tenant-b' } });
    const archived = await r.openEvents('tenant-a', 'r1', 0);
    expect(archived).toEqual({ archived: true, events: [event] });
    const live = await r.openEvents('tenant-a', 'r2', 0);
    expect(live.archived).toBe(false);
    if (!live.archived) await live.follow(handlers);
    await expect(r.openEvents('tenant-a', 'r3', 0)).rejects.toBeInstanceOf(RunNotFoundError);
    expect(calls).toEqual([
      'progress r1',
      'archive.readEvents r1 after 0',
      'progress r2',
      'subscribe r2',
      'progress r3',
    ]);
  });

  it('openEvents with the log end the request read asks Redis nothing more', async () => {
    const calls: string[] = [];
    const r = reads({ calls, hot: { r2: 'tenant-a' } });
    const end = await r.logEnd('tenant-a', 'r2');
    const opened = await r.openEvents('tenant-a', 'r2', 0, end);
    if (!opened.archived) await opened.follow(handlers);
    expect(calls).toEqual(['lastSeqForTenant r2', 'subscribe r2']);
  });
});
