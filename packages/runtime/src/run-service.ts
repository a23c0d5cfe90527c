import { randomUUID } from 'node:crypto';
import type { DeadlineExpiry } from '@baton/core';
import type {
  Checkpoint,
  CreateRunRequest,
  BulkReplayFilter,
  BulkReplayStatus,
  ForkRunRequest,
  QueuedInfo,
  RunEvent,
  RunStatus,
  RunWebhooksResponse,
} from '@baton/protocol';
import { AgentCatalog } from './agent-registry.ts';
import type { ListRunsQuery, RunPage } from './run-record/run-list-cursor.ts';
import type { ThreadPage } from './redis/thread-store.ts';
import type { Loaded } from './run-committer.ts';
import type { SubmittedDecisions } from './decision-routing.ts';
import type { RunParts, RunServiceDeps } from './run-service-deps.ts';
import type { AgentVersions } from './agent-versions.ts';
import { RunReads, type LogEnd, type OpenedEvents, type RunFollowState } from './run-reads.ts';
import { RunStarts } from './run-starts.ts';
import { RunCreation, type CreateRunOptions, type CreatedRun } from './run-creation.ts';
import { RunDeletion } from './run-deletion.ts';
import { RunDecisions, type SourcedDecisionInput } from './run-decisions.ts';
import { RunAdmissionViews, type RunAdmissionView } from './run-admission-views.ts';
import { RunForks, type ForkedRun } from './run-forks.ts';
import { BulkReplays } from './bulk-replays.ts';

export type { RunServiceDeps } from './run-service-deps.ts';
export type { CreateRunOptions, CreatedRun } from './run-creation.ts';
export type { LogEnd, OpenedEvents, RunFollowState } from './run-reads.ts';
export type { RunAdmissionView } from './run-admission-views.ts';

/** Which page of a thread to read (RedisThreadStore.page). */
export interface ThreadPageAt {
  readonly before: number | null;
  readonly limit: number;
  readonly maxBytes: number;
}

/** Messages of a thread page (GET /v1/threads/:id) unless `limit` says otherwise; at most 1,000. */
export const THREAD_PAGE_DEFAULT = 100;
/** A page's messages stop short of this many bytes of JSON (one message at least). */
export const THREAD_PAGE_MAX_BYTES = 1024 * 1024;

/**
 * The control plane shared by the HTTP API and tests: create runs, accept decisions, cancel,
 * delete, and every tenant-scoped read. It needs no agent code: agent specs come from what
 * workers advertise. A façade: creation (run-creation.ts), deletion (run-deletion.ts),
 * decisions and cancels (run-decisions.ts) and reads (run-reads.ts, Redis first and the
 * archive on a miss) are parts of their own, sharing one RunParts.
 */
export class RunService {
  readonly catalog: AgentCatalog;
  /** Agent versions: the current one per agent (promote, rollback), parked runs. */
  readonly versions: AgentVersions;
  private readonly reads: RunReads;
  private readonly starts: RunStarts;
  private readonly creation: RunCreation;
  private readonly deletion: RunDeletion;
  private readonly decisions: RunDecisions;
  private readonly admissionViews: RunAdmissionViews;
  private readonly forks: RunForks;
  private readonly bulkReplays: BulkReplays;

  constructor(deps: RunServiceDeps) {
    this.catalog = new AgentCatalog(deps.redis, deps.keys, deps.queues.versions);
    this.versions = deps.queues.versions;
    this.reads = new RunReads(deps);
    this.starts = new RunStarts(deps.queues, deps.admission);
    const parts: RunParts = {
      deps,
      ids: deps.ids ?? randomUUID,
      reads: this.reads,
      starts: this.starts,
    };
    this.decisions = new RunDecisions(parts);
    this.creation = new RunCreation(parts, this.catalog, (tenantId, runId) =>
      this.decisions.cancel(tenantId, runId),
    );
    this.deletion = new RunDeletion(parts);
    this.admissionViews = new RunAdmissionViews(deps.store, deps.admission);
    this.forks = new RunForks(parts, this.catalog);
    this.bulkReplays = new BulkReplays(parts, this.forks);
  }

  /** See BulkReplays.start: replays the runs the filter selects, in the background. */
  replayRuns(tenantId: string, filter: BulkReplayFilter): Promise<BulkReplayStatus> {
    return this.bulkReplays.start(tenantId, filter);
  }

  /** A bulk replay's progress (and it carries on one whose processor is gone). */
  bulkReplay(tenantId: string, replayId: string): Promise<BulkReplayStatus> {
    return this.bulkReplays.status(tenantId, replayId);
  }

  /** See RunForks.fork: a new run from the original's state after event atSeq. */
  forkRun(tenantId: string, runId: string, request: ForkRunRequest): Promise<ForkedRun> {
    return this.forks.fork(tenantId, runId, request);
  }

  /** See RunForks.replay: a failed or cancelled run again, from its last committed step. */
  replayRun(tenantId: string, runId: string): Promise<ForkedRun> {
    return this.forks.replay(tenantId, runId);
  }

  /** See CreateRunOptions for runs whose id derives from their trigger, and resends. */
  createRun(
    tenantId: string,
    request: CreateRunRequest,
    opts: CreateRunOptions = {},
  ): Promise<CreatedRun> {
    return this.creation.createRun(tenantId, request, opts);
  }

  /** See RunDecisions.submitDecisions. */
  submitDecisions(
    tenantId: string,
    runId: string,
    inputs: readonly SourcedDecisionInput[],
    opts: { readonly current?: Loaded } = {},
  ): Promise<SubmittedDecisions> {
    return this.decisions.submitDecisions(tenantId, runId, inputs, opts);
  }

  /** See RunDecisions.expireDeadline (a timer's handler calls it). */
  expireDeadline(tenantId: string, runId: string, toolCallId: string): Promise<DeadlineExpiry> {
    return this.decisions.expireDeadline(tenantId, runId, toolCallId);
  }

  /** See RunDecisions.cancel. */
  cancel(tenantId: string, runId: string): Promise<{ status: Checkpoint['status'] }> {
    return this.decisions.cancel(tenantId, runId);
  }

  /** See RunDeletion.deleteRun. */
  deleteRun(tenantId: string, runId: string): Promise<void> {
    return this.deletion.deleteRun(tenantId, runId);
  }

  /** See RunDeletion.deleteThread. */
  deleteThread(tenantId: string, threadId: string): Promise<{ runs: number }> {
    return this.deletion.deleteThread(tenantId, threadId);
  }

  /** Why the run waits for a slot and where it stands; null when it does not (docs/fairness.md). */
  queuedInfo(identity: Checkpoint['identity']): Promise<QueuedInfo | null> {
    return this.starts.queuedInfo(identity);
  }

  /** See RunAdmissionViews.of (GET /v1/runs). */
  admissionOf(tenantId: string, runIds: readonly string[]): Promise<Map<string, RunAdmissionView>> {
    return this.admissionViews.of(tenantId, runIds);
  }

  /** See RunAdmissionViews.parked (GET /v1/runs?admission=queued). */
  parkedRuns(tenantId: string): Promise<Set<string>> {
    return this.admissionViews.parked(tenantId);
  }

  /*
   * Reads for the API and embedders (RunReads), each scoped to a tenant: another tenant's run is
   * a missing one (RunNotFoundError, or null/'absent' where a missing run is an answer).
   */

  load(tenantId: string, runId: string): Promise<Loaded> {
    return this.decisions.load(tenantId, runId);
  }

  /** The run's checkpoint and its whole event log (what a snapshot is folded from). */
  async loadWithEvents(tenantId: string, runId: string): Promise<Loaded & { events: RunEvent[] }> {
    return this.decisions.issue(await this.reads.loadWithEvents(tenantId, runId));
  }

  /** Seq of the run's last event (0: none yet), read without the checkpoint. */
  lastSeq(tenantId: string, runId: string): Promise<number> {
    return this.reads.lastSeq(tenantId, runId);
  }

  /** lastSeq(), and whether the run is one only the archive still has (see openEvents). */
  logEnd(tenantId: string, runId: string): Promise<LogEnd> {
    return this.reads.logEnd(tenantId, runId);
  }

  /** The run's events with seq > afterSeq, in order. */
  events(tenantId: string, runId: string, afterSeq = 0): Promise<RunEvent[]> {
    return this.reads.events(tenantId, runId, afterSeq);
  }

  /** See RunReads.openEvents: replayed from the archive, or subscribed to live. */
  openEvents(
    tenantId: string,
    runId: string,
    afterSeq: number,
    end?: LogEnd,
  ): Promise<OpenedEvents> {
    return this.reads.openEvents(tenantId, runId, afterSeq, end);
  }

  /** A (child) run's status; null when it does not exist (yet, or any more). */
  statusOf(tenantId: string, runId: string): Promise<RunStatus | null> {
    return this.reads.statusOf(tenantId, runId);
  }

  /** See RunReads.follow. */
  follow(tenantId: string, runId: string): Promise<RunFollowState> {
    return this.reads.follow(tenantId, runId);
  }

  /** The run's webhook endpoints (never their secrets) and delivery log. */
  webhooks(tenantId: string, runId: string): Promise<RunWebhooksResponse> {
    return this.reads.webhooks(tenantId, runId);
  }

  listRuns(query: ListRunsQuery): Promise<RunPage> {
    return this.reads.listRuns(query);
  }

  /**
   * The thread as a client that saw its last run's `run.finished` expects it: that run's
   * messages in, even when its worker has not released the thread yet (done right after the
   * final commit, so a read can come in between).
   */
  async thread(
    tenantId: string,
    threadId: string,
    at: ThreadPageAt = {
      before: null,
      limit: THREAD_PAGE_DEFAULT,
      maxBytes: THREAD_PAGE_MAX_BYTES,
    },
  ): Promise<ThreadPage> {
    await this.creation.settleActiveRun(tenantId, threadId, '');
    return this.reads.thread(tenantId, threadId, at);
  }
}
