import type { RunArchive } from '@baton/core';
import type { RunEvent, RunStatus, RunWebhooksResponse } from '@baton/protocol';
import { ArchiveReads, NoArchive, type ColdReads } from './archive/archive-reads.ts';
import type { ListRunsQuery, RedisRunStore, RunPage } from './redis/redis-run-store.ts';
import type { RedisThreadStore, ThreadPage } from './redis/thread-store.ts';
import type { RunEventSubscriber } from './redis/event-subscriber.ts';
import type { Loaded } from './run-committer.ts';
import type { WebhookOutbox } from './webhooks/webhook-outbox.ts';
import { RunNotFoundError } from './errors/run-not-found-error.ts';
import type { EventLogRewound } from './errors/event-log-rewound-error.ts';

export interface RunReadsDeps {
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  /** ARCHIVE_URL's archive: reads fall through to it once Redis has let a run go. */
  readonly archive?: RunArchive | undefined;
  readonly webhooks?: WebhookOutbox | undefined;
  /** The live half of openEvents (created on first use: only the API streams). */
  readonly subscriber?: (() => RunEventSubscriber) | undefined;
}

/** See RunService.follow. */
export type RunFollowState =
  { readonly status: RunStatus; readonly lastSeq: number } | 'absent' | 'hidden';

/** Where a run's log ends, and whether only the archive still has it (RunReads.logEnd). */
export interface LogEnd {
  readonly lastSeq: number;
  readonly archived: boolean;
}

/** A run, and whether Redis answered for it (false: the archive did). */
export interface LoadedFrom {
  readonly loaded: Loaded;
  readonly hot: boolean;
}

/** What a stream of a run's events is told (OpenedEvents.follow). */
export interface EventHandlers {
  onEvent(event: RunEvent): void;
  /** The log lost events this stream had sent (see RunEventSubscriber's onRewound). */
  onRewound(rewound: EventLogRewound): void;
}

/**
 * An opened stream of a run's events: a run only the archive still has is replayed (its log
 * after the cursor is all there is, read already); any other is followed live once the caller
 * is ready to write (follow: the backlog after the cursor first, then live, until unsubscribe).
 */
export type OpenedEvents =
  | { readonly archived: true; readonly events: RunEvent[] }
  | {
      readonly archived: false;
      follow(handlers: EventHandlers): Promise<() => Promise<void>>;
    };

/**
 * The one seam for tenant-scoped reads of runs, their events and threads: Redis is asked once,
 * and the cold half (ColdReads: the archive, or nothing without one) only when Redis does not
 * have the run. Another tenant's run is a missing one (RunNotFoundError, or null/'absent' where
 * a missing run is an answer), and is never read past its tenant field.
 */
export class RunReads {
  /** The archive's reads, or NoArchive: nothing here asks whether there is an archive. */
  readonly cold: ColdReads;
  private readonly deps: RunReadsDeps;

  constructor(deps: RunReadsDeps) {
    this.deps = deps;
    this.cold = deps.archive
      ? new ArchiveReads({ archive: deps.archive, store: deps.store, threads: deps.threads })
      : new NoArchive({ store: deps.store, threads: deps.threads });
  }

  /** The run from Redis, else from the archive; null when neither has it for this tenant. */
  async loadFrom(tenantId: string, runId: string): Promise<LoadedFrom | null> {
    const hot = await this.deps.store.loadForTenant(runId, tenantId);
    if (hot) return { loaded: hot, hot: true };
    const cold = await this.cold.loadRun(tenantId, runId);
    return cold ? { loaded: cold, hot: false } : null;
  }

  async load(tenantId: string, runId: string): Promise<Loaded> {
    const found = await this.loadFrom(tenantId, runId);
    if (!found) throw new RunNotFoundError(runId);
    return found.loaded;
  }

  /**
   * The run's checkpoint and its whole event log (what a snapshot is folded from). A run only
   * the archive has costs one Redis read (its missing tenant field) and two archive reads.
   */
  async loadWithEvents(tenantId: string, runId: string): Promise<Loaded & { events: RunEvent[] }> {
    const found = await this.loadFrom(tenantId, runId);
    if (!found) throw new RunNotFoundError(runId);
    const { loaded, hot } = found;
    let events = hot ? await this.deps.store.readEvents(runId) : null;
    // Its keys expired between the two reads: the archive has it by then.
    if (events === null || events.length === 0)
      events = (await this.cold.readEvents(tenantId, runId, 0, !hot)) ?? events ?? [];
    return { ...loaded, events };
  }

  /** Seq of the run's last event (0: none yet), read without the checkpoint. */
  async lastSeq(tenantId: string, runId: string): Promise<number> {
    return (await this.logEnd(tenantId, runId)).lastSeq;
  }

  /** lastSeq(), and whether the run is one only the archive still has (nothing of it is live). */
  async logEnd(tenantId: string, runId: string): Promise<LogEnd> {
    const hot = await this.deps.store.lastSeqForTenant(runId, tenantId);
    if (hot !== null) return { lastSeq: hot, archived: false };
    const cold = await this.cold.lastSeq(tenantId, runId);
    if (cold === null) throw new RunNotFoundError(runId);
    return { lastSeq: cold, archived: true };
  }

  /** The run's events with seq > afterSeq, in order. */
  async events(tenantId: string, runId: string, afterSeq = 0): Promise<RunEvent[]> {
    const end = await this.logEnd(tenantId, runId);
    if (!end.archived) return this.deps.store.readEvents(runId, afterSeq);
    return (await this.cold.readEvents(tenantId, runId, afterSeq)) ?? [];
  }

  /**
   * The one way to stream a run's events (the plain SSE route, the tree stream, the protocol
   * streams): a run only the archive has is replayed from it; any other is followed live after
   * afterSeq (a run not created yet too: a tree's child may be linked before it exists).
   * Another tenant's run is RunNotFoundError. `end`: what logEnd answered this request just
   * now (its tenant check), so Redis is not asked again.
   */
  async openEvents(
    tenantId: string,
    runId: string,
    afterSeq: number,
    end?: LogEnd,
  ): Promise<OpenedEvents> {
    const archived = end ? end.archived : await this.isArchived(tenantId, runId);
    if (archived) {
      const events = await this.cold.readEvents(tenantId, runId, afterSeq);
      // Deleted since logEnd found it archived: nothing more of it will come.
      if (events !== null || end) return { archived: true, events: events ?? [] };
    }
    const { subscriber } = this.deps;
    if (!subscriber) throw new Error('RunReads.openEvents: no event subscriber was configured');
    return {
      archived: false,
      follow: (handlers) =>
        subscriber().subscribe(runId, afterSeq, (event) => handlers.onEvent(event), {
          onRewound: (rewound) => handlers.onRewound(rewound),
        }),
    };
  }

  /** Whether only the archive has the run; another tenant's hot run is RunNotFoundError. */
  private async isArchived(tenantId: string, runId: string): Promise<boolean> {
    const progress = await this.deps.store.progress(runId);
    if (progress !== null) {
      if (progress.tenantId !== tenantId) throw new RunNotFoundError(runId);
      return false;
    }
    return true;
  }

  /** A (child) run's status; null when it does not exist (yet, or any more). */
  async statusOf(tenantId: string, runId: string): Promise<RunStatus | null> {
    const state = await this.follow(tenantId, runId);
    return typeof state === 'object' ? state.status : null;
  }

  /**
   * What a stream following a run tree needs of one of its runs: its status and last seq, or
   * 'absent' (not created yet, or gone), or 'hidden' (another tenant's: never to be followed).
   */
  async follow(tenantId: string, runId: string): Promise<RunFollowState> {
    const progress = await this.deps.store.progress(runId);
    if (progress === null) {
      const archived = await this.cold.lastSeq(tenantId, runId);
      return archived === null ? 'absent' : { status: 'done', lastSeq: archived };
    }
    if (progress.tenantId !== tenantId) return 'hidden';
    return { status: progress.status, lastSeq: progress.lastSeq };
  }

  /** The run's webhook endpoints (never their secrets) and delivery log. */
  async webhooks(tenantId: string, runId: string): Promise<RunWebhooksResponse> {
    await this.logEnd(tenantId, runId);
    return (await this.deps.webhooks?.view(runId)) ?? { runId, endpoints: [], deliveries: [] };
  }

  listRuns(query: ListRunsQuery): Promise<RunPage> {
    return this.cold.listRuns(query);
  }

  /** A page of the thread: Redis's, merged with the archive's runs (or its copy, once forgotten). */
  async thread(
    tenantId: string,
    threadId: string,
    at: { readonly before: number | null; readonly limit: number; readonly maxBytes: number },
  ): Promise<ThreadPage> {
    const hot = await this.deps.threads.page(tenantId, threadId, at);
    return this.cold.thread(tenantId, threadId, hot, at);
  }
}
