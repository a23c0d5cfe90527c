import {
  AgentCurrentVersionSchema,
  AgentDescriptorSchema,
  AgentListSchema,
  BulkReplayStatusSchema,
  CancelResponseSchema,
  CreateRunResponseSchema,
  DecisionsResponseSchema,
  DeleteThreadResponseSchema,
  ForkRunResponseSchema,
  RunPageSchema,
  RunViewSchema,
  RunWebhooksResponseSchema,
  ThreadResponseSchema,
  type AgentCurrentVersion,
  type AgentDescriptor,
  type BulkReplayFilter,
  type BulkReplayStatus,
  type CancelResponse,
  type CreateRunRequest,
  type CreateRunResponse,
  type DecisionInput,
  type DecisionsResponse,
  type DeleteThreadResponse,
  type ForkRunRequest,
  type ForkRunResponse,
  type RunPage,
  type RunStatus,
  type RunView,
  type RunWebhooksResponse,
  type ThreadResponse,
} from '@baton/protocol';
import { z } from 'zod';
import { RunEventStream, type StreamOptions } from './run-stream.ts';
import { SchedulesApi } from './schedules.ts';
import { EventsApi, WaitpointsApi } from './waits.ts';
import { AdminKeysApi } from './admin-keys.ts';
import { Transport, type ClientOptions, type RequestOptions } from './transport.ts';

/** Filters of `GET /v1/runs` (newest first). */
export interface ListRunsQuery {
  readonly status?: RunStatus;
  readonly agent?: string;
  readonly thread?: string;
  /** Runs of this fairness key (a run without one has its tenant's). */
  readonly fairnessKey?: string;
  /** Runs created on this agent version (`GET /v1/agents` lists each agent's versions). */
  readonly agentVersion?: string;
  /** `queued`: only runs waiting for a slot of their tenant or fairness key (docs/fairness.md). */
  readonly admission?: 'queued';
  /** Page size, 1..100 (default 20). */
  readonly limit?: number;
  /** `nextCursor` of the previous page. */
  readonly cursor?: string;
  /** Admin keys only: another tenant's runs. */
  readonly tenant?: string;
}

export interface CreateRunOptions extends RequestOptions {
  /** Same key + same body returns the same run; same key + another body is `idempotency_conflict`. */
  readonly idempotencyKey?: string;
}

/** A created run; `replayed` is true when an Idempotency-Key returned an existing run. */
export type CreatedRun = CreateRunResponse & { readonly replayed: boolean };

const empty = z.unknown();

/** Runs: create, inspect, list, decide, cancel, and stream their events. */
export class RunsApi {
  private readonly t: Transport;
  constructor(transport: Transport) {
    this.t = transport;
  }

  /** `POST /v1/runs`: starts a run (202); the run executes on a worker. */
  async create(request: CreateRunRequest, opts: CreateRunOptions = {}): Promise<CreatedRun> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.idempotencyKey !== undefined) headers['idempotency-key'] = opts.idempotencyKey;
    const res = await this.t.json('POST', '/v1/runs', CreateRunResponseSchema, {
      body: request,
      headers,
      signal: opts.signal,
    });
    return { ...res.body, replayed: res.headers.get('idempotent-replayed') === 'true' };
  }

  /**
   * `GET /v1/runs/:id`: the run's snapshot (status, await tickets, tool calls, usage, ...), with
   * its child runs' status, its parent (on a child run) and its schedule (on a scheduled run).
   */
  async get(runId: string, opts: RequestOptions = {}): Promise<RunView> {
    return (await this.t.json('GET', `/v1/runs/${enc(runId)}`, RunViewSchema, opts)).body;
  }

  /** `GET /v1/runs/:id/webhooks`: the run's webhook endpoints (no secrets) and delivery log. */
  async webhooks(runId: string, opts: RequestOptions = {}): Promise<RunWebhooksResponse> {
    return (
      await this.t.json('GET', `/v1/runs/${enc(runId)}/webhooks`, RunWebhooksResponseSchema, opts)
    ).body;
  }

  /** `GET /v1/runs`: one page of the tenant's runs, newest first. */
  async list(query: ListRunsQuery = {}, opts: RequestOptions = {}): Promise<RunPage> {
    return (await this.t.json('GET', '/v1/runs', RunPageSchema, { ...opts, query: { ...query } }))
      .body;
  }

  /** `POST /v1/runs/:id/decisions`: answers suspended tool calls (202; a repeated decisionId is a no-op). */
  async decide(
    runId: string,
    decisions: DecisionInput | readonly DecisionInput[],
    opts: RequestOptions = {},
  ): Promise<DecisionsResponse> {
    const list = Array.isArray(decisions) ? decisions : [decisions];
    return (
      await this.t.json('POST', `/v1/runs/${enc(runId)}/decisions`, DecisionsResponseSchema, {
        ...opts,
        body: { decisions: list },
      })
    ).body;
  }

  /** Resumes (approves) one suspended call, with the payload its ticket's responseSchema asks for. */
  approve(
    runId: string,
    toolCallId: string,
    payload?: DecisionInput['payload'],
    opts: RequestOptions & { decisionId?: string } = {},
  ): Promise<DecisionsResponse> {
    return this.decide(
      runId,
      {
        toolCallId,
        action: 'resume',
        ...(payload === undefined ? {} : { payload }),
        ...(opts.decisionId === undefined ? {} : { decisionId: opts.decisionId }),
      },
      opts,
    );
  }

  /** Cancels (denies) one suspended call. */
  deny(
    runId: string,
    toolCallId: string,
    opts: RequestOptions & { decisionId?: string } = {},
  ): Promise<DecisionsResponse> {
    return this.decide(
      runId,
      {
        toolCallId,
        action: 'cancel',
        ...(opts.decisionId === undefined ? {} : { decisionId: opts.decisionId }),
      },
      opts,
    );
  }

  /** `POST /v1/runs/:id/cancel`: cancels the run (202, idempotent: a finished run answers `done`). */
  async cancel(runId: string, opts: RequestOptions = {}): Promise<CancelResponse> {
    return (await this.t.json('POST', `/v1/runs/${enc(runId)}/cancel`, CancelResponseSchema, opts))
      .body;
  }

  /**
   * `POST /v1/runs/:id/fork`: a new run on a new thread branch whose state is this run's after
   * event `atSeq` (its log opens with this run's events 1…atSeq); `input` adds user messages at
   * a step boundary or after the run's end. The original is not changed.
   */
  async fork(
    runId: string,
    request: ForkRunRequest,
    opts: RequestOptions = {},
  ): Promise<ForkRunResponse> {
    return (
      await this.t.json('POST', `/v1/runs/${enc(runId)}/fork`, ForkRunResponseSchema, {
        ...opts,
        body: request,
      })
    ).body;
  }

  /**
   * `POST /v1/runs/:id/replay`: a failed or cancelled run again, as a new run (`origin.kind`
   * `replay`) from its last committed progress (409 `run_not_replayable` for any other run).
   */
  async replay(runId: string, opts: RequestOptions = {}): Promise<ForkRunResponse> {
    return (await this.t.json('POST', `/v1/runs/${enc(runId)}/replay`, ForkRunResponseSchema, opts))
      .body;
  }

  /**
   * `POST /v1/runs/replay`: replays the failed or cancelled runs `filter` selects, in batches;
   * the answer (and {@link bulkReplay}) says how far it got.
   */
  async replayMany(
    filter: Partial<BulkReplayFilter>,
    opts: RequestOptions = {},
  ): Promise<BulkReplayStatus> {
    return (
      await this.t.json('POST', '/v1/runs/replay', BulkReplayStatusSchema, {
        ...opts,
        body: { filter },
      })
    ).body;
  }

  /** `GET /v1/replays/:id`: a bulk replay's progress. */
  async bulkReplay(replayId: string, opts: RequestOptions = {}): Promise<BulkReplayStatus> {
    return (await this.t.json('GET', `/v1/replays/${enc(replayId)}`, BulkReplayStatusSchema, opts))
      .body;
  }

  /**
   * `DELETE /v1/runs/:id`: deletes a finished run and its events now (409 `run_active` while it
   * has not finished: cancel it first).
   */
  async delete(runId: string, opts: RequestOptions = {}): Promise<void> {
    await this.t.noContent('DELETE', `/v1/runs/${enc(runId)}`, opts);
  }

  /**
   * `GET /v1/runs/:id/events` as an async iterator of typed events that reconnects by itself
   * (see {@link RunEventStream}).
   */
  stream(runId: string, opts: StreamOptions = {}): RunEventStream {
    return new RunEventStream(this.t, runId, opts);
  }
}

/** Threads: a conversation's history and its runs. */
export class ThreadsApi {
  private readonly t: Transport;
  constructor(transport: Transport) {
    this.t = transport;
  }

  /**
   * `GET /v1/threads/:id`: a page of the history (messages of finished runs: the newest, or
   * those before `page.cursor`, a previous page's `nextCursor`), the active run, queued runs,
   * runs, state. `history` reads every page.
   */
  async get(
    threadId: string,
    opts: RequestOptions = {},
    page: { readonly cursor?: string; readonly limit?: number } = {},
  ): Promise<ThreadResponse> {
    return (
      await this.t.json('GET', `/v1/threads/${enc(threadId)}`, ThreadResponseSchema, {
        ...opts,
        query: { ...page },
      })
    ).body;
  }

  /**
   * The whole history of the thread, oldest first, page by page (a long thread is many
   * requests: prefer `get` and its pages where the newest messages suffice).
   */
  async history(threadId: string, opts: RequestOptions = {}): Promise<ThreadResponse> {
    let page = await this.get(threadId, opts, { limit: 1_000 });
    const pages = [page.messages];
    const first = page;
    while (typeof page.nextCursor === 'string') {
      page = await this.get(threadId, opts, { cursor: page.nextCursor, limit: 1_000 });
      pages.unshift(page.messages);
    }
    return { ...first, messages: pages.flat(), nextCursor: null };
  }

  /**
   * `DELETE /v1/threads/:id`: deletes the thread, its history and its finished runs (409
   * `thread_busy` while a run is active or queued on it).
   */
  async delete(threadId: string, opts: RequestOptions = {}): Promise<DeleteThreadResponse> {
    return (
      await this.t.json('DELETE', `/v1/threads/${enc(threadId)}`, DeleteThreadResponseSchema, opts)
    ).body;
  }

  /** `GET /v1/threads/:id/runs`: the thread's runs, newest first. */
  async runs(
    threadId: string,
    query: Omit<ListRunsQuery, 'thread' | 'tenant'> = {},
    opts: RequestOptions = {},
  ): Promise<RunPage> {
    return (
      await this.t.json('GET', `/v1/threads/${enc(threadId)}/runs`, RunPageSchema, {
        ...opts,
        query: { ...query },
      })
    ).body;
  }
}

/** Agents as workers advertise them. */
export class AgentsApi {
  private readonly t: Transport;
  constructor(transport: Transport) {
    this.t = transport;
  }

  /** `GET /v1/agents`. */
  async list(opts: RequestOptions = {}): Promise<AgentDescriptor[]> {
    return (await this.t.json('GET', '/v1/agents', AgentListSchema, opts)).body.agents;
  }

  /** `GET /v1/agents/:name` (`not_found` when no worker advertises it). */
  async get(name: string, opts: RequestOptions = {}): Promise<AgentDescriptor> {
    return (await this.t.json('GET', `/v1/agents/${enc(name)}`, AgentDescriptorSchema, opts)).body;
  }

  /**
   * `POST /v1/agents/:name/promote` (admin keys): new runs of the agent get `version` from now
   * on (every API within 1 s). `not_found` for a version no worker advertised.
   */
  async promote(
    name: string,
    version: string,
    opts: RequestOptions = {},
  ): Promise<AgentCurrentVersion> {
    return (
      await this.t.json('POST', `/v1/agents/${enc(name)}/promote`, AgentCurrentVersionSchema, {
        ...opts,
        body: { version },
      })
    ).body;
  }

  /**
   * `POST /v1/agents/:name/rollback` (admin keys): back to the version current before the last
   * promote (`conflict` when there is none).
   */
  async rollback(name: string, opts: RequestOptions = {}): Promise<AgentCurrentVersion> {
    return (
      await this.t.json('POST', `/v1/agents/${enc(name)}/rollback`, AgentCurrentVersionSchema, opts)
    ).body;
  }
}

/**
 * The typed Baton API client. fetch-based, so it runs in Node 22+, browsers, Deno and Bun.
 * Every answer is validated against the protocol's zod schemas; every failure is a
 * {@link BatonApiError} (with the API's error `code`) or a {@link BatonClientError}.
 *
 * @example
 * ```ts
 * const baton = new BatonClient({ baseUrl: 'http://localhost:3000', apiKey: process.env.BATON_API_KEY });
 * const { runId } = await baton.runs.create({ agent: 'assistant', input: { messages: [{ role: 'user', content: 'deploy' }] } });
 * for await (const e of baton.runs.stream(runId, { until: 'suspended' })) console.log(e.type);
 * ```
 */
export class BatonClient {
  readonly runs: RunsApi;
  readonly threads: ThreadsApi;
  readonly agents: AgentsApi;
  readonly schedules: SchedulesApi;
  /** `POST /v1/events`: resume the calls waiting for an event. */
  readonly events: EventsApi;
  /** Waitpoint URLs: create one for a waiting call, or complete one. */
  readonly waitpoints: WaitpointsApi;
  /** Tenant API keys (needs an admin key). */
  readonly keys: AdminKeysApi;
  readonly baseUrl: string;
  private readonly transport: Transport;

  constructor(opts: ClientOptions) {
    this.transport = new Transport(opts);
    this.baseUrl = this.transport.baseUrl;
    this.runs = new RunsApi(this.transport);
    this.threads = new ThreadsApi(this.transport);
    this.agents = new AgentsApi(this.transport);
    this.schedules = new SchedulesApi(this.transport);
    this.events = new EventsApi(this.transport);
    this.waitpoints = new WaitpointsApi(this.transport);
    this.keys = new AdminKeysApi(this.transport);
  }

  /** `GET /healthz`: resolves when the API process answers. */
  async health(opts: RequestOptions = {}): Promise<void> {
    await this.transport.json('GET', '/healthz', empty, opts);
  }
}

function enc(id: string): string {
  return encodeURIComponent(id);
}
