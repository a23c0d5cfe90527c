import { foldSnapshot } from '@baton/core';
import {
  CreateRunRequestSchema,
  IdSchema,
  type Checkpoint,
  type DecisionInput,
  type InputMessage,
  type JsonValue,
  type Message,
  type RunEvent,
  type RunSnapshot,
} from '@baton/protocol';
import type { Response } from 'express';
import type { Principal } from '../auth.ts';
import { withOwner } from '../authz/authorize-request.ts';
import type { ApiContext } from '../context.ts';
import { validationError } from '../errors.ts';
import { SseConnection } from '../sse-connection.ts';
import type { PendingRun } from './shared.ts';

/**
 * The I/O half of the protocol routes (the mappings themselves are pure, see README.md): find the
 * run a thread waits on, start runs, and stream a run's events through a protocol mapper.
 */

/** What a thread looks like to a protocol request. */
export interface ThreadView {
  readonly threadId: string;
  /** Conversation of the thread's finished runs (Baton keeps the history, not the client). */
  readonly messages: Message[];
  readonly state: Record<string, JsonValue>;
  /** The thread's active run, with its event log so far (null when none is active). */
  readonly active: {
    readonly runId: string;
    readonly checkpoint: Checkpoint;
    /** The checkpoint's version (with it, a decision need not read the run again). */
    readonly version: number;
    readonly events: RunEvent[];
    readonly snapshot: RunSnapshot;
  } | null;
  /** The active run when it waits for decisions (what the request mappers call PendingRun). */
  readonly pending: PendingRun | null;
}

export async function loadThread(
  ctx: ApiContext,
  tenantId: string,
  threadId: string,
): Promise<ThreadView> {
  const thread = await ctx.service.thread(tenantId, threadId);
  const base = { threadId, messages: thread.messages, state: thread.state };
  if (thread.activeRunId === null) return { ...base, active: null, pending: null };
  const runId = thread.activeRunId;
  const { checkpoint, version, events } = await ctx.service.loadWithEvents(tenantId, runId);
  const snapshot = foldSnapshot(events);
  const pending =
    checkpoint.status === 'waiting' && (snapshot.await?.calls.length ?? 0) > 0
      ? { runId, await: snapshot.await }
      : null;
  return { ...base, active: { runId, checkpoint, version, events, snapshot }, pending };
}

/**
 * Submits decisions for the thread's waiting run, handing the service the run as loadThread read
 * it (so the conversation is not read a second time).
 */
export async function submitToThread(
  ctx: ApiContext,
  tenantId: string,
  thread: ThreadView | null,
  command: { readonly runId: string; readonly decisions: readonly DecisionInput[] },
): Promise<void> {
  const active = thread?.active;
  const current = active?.runId === command.runId ? { current: active } : {};
  await ctx.service.submitDecisions(tenantId, command.runId, command.decisions, current);
}

/** A protocol thread id as a Baton id (null when it is not one). */
export function threadIdOf(value: unknown): string | null {
  const parsed = IdSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/**
 * The protocol routes' way to set a run's priority and fairness key (their bodies are the
 * protocol's): the `Baton-Priority` and `Baton-Fairness-Key` headers, validated as
 * POST /v1/runs validates `options.priority` and `options.fairnessKey`.
 */
export function fairnessHeaders(headers: {
  readonly [name: string]: string | string[] | undefined;
}): { priority?: unknown; fairnessKey?: unknown } {
  const priority = headers['baton-priority'];
  const fairnessKey = headers['baton-fairness-key'];
  return {
    ...(typeof priority === 'string' ? { priority: Number(priority) } : {}),
    ...(typeof fairnessKey === 'string' ? { fairnessKey } : {}),
  };
}

/** Creates a run on the thread through the same validation and metrics as POST /v1/runs. */
export async function startRun(
  ctx: ApiContext,
  tenantId: string,
  command: { threadId: string; agent: string; input: InputMessage[] },
  options: { priority?: unknown; fairnessKey?: unknown } = {},
  /** An end user's run is theirs (authz/authorize-request.ts withOwner). */
  principal?: Principal,
): Promise<string> {
  const parsed = CreateRunRequestSchema.safeParse({
    agent: command.agent,
    threadId: command.threadId,
    input: { messages: command.input },
    ...(Object.keys(options).length > 0 ? { options } : {}),
  });
  if (!parsed.success) throw validationError(parsed.error, 'body');
  const request = principal === undefined ? parsed.data : withOwner(parsed.data, principal);
  const created = await ctx.service.createRun(tenantId, request);
  ctx.metrics.runsCreated.inc({
    agent: parsed.data.agent,
    version: created.agentVersion ?? '',
  });
  return created.runId;
}

const REWOUND_MESSAGE =
  "event_log_rewound: the store lost events of this run after a restart; read the run's events again from the start";

/** How one protocol turns events into SSE text. */
export interface FrameSink {
  /** Frames for one event. */
  map(event: RunEvent): string[];
  /** Frames that close the response when the events stop early (shutdown, disconnect). */
  end(): string[];
  /** Frames that report an error after the stream started (the protocol's error event). */
  error(message: string): string[];
  /** True once the protocol's terminal frame went out. */
  readonly done: boolean;
  /** Written after everything else (e.g. the AI SDK's `data: [DONE]`). */
  readonly trailer?: string;
}

/**
 * A subscription to one run's events that buffers until `open()` writes the response headers.
 * Subscribe BEFORE submitting decisions (so the first resumed event cannot be missed), open the
 * stream only once the decisions were accepted (so a refused decision is still a JSON error).
 * Once open it is an SseConnection like the native event stream's: the same heartbeat, buffer
 * limit, stream slot and shutdown.
 */
export class RunStream {
  private readonly ctx: ApiContext;
  private readonly runId: string;
  private buffer: RunEvent[] = [];
  private sink: FrameSink | null = null;
  private conn: SseConnection | null = null;
  private unsubscribe: (() => Promise<void>) | null = null;
  private release: (() => void) | null = null;
  private finished = false;
  /** The log was found rewound before the response opened (see onRewound). */
  private rewound = false;

  private constructor(ctx: ApiContext, runId: string) {
    this.ctx = ctx;
    this.runId = runId;
  }

  /** Subscribes to the run's events after `afterSeq` (the backlog is buffered). */
  static async attach(
    ctx: ApiContext,
    tenantId: string,
    runId: string,
    afterSeq: number,
  ): Promise<RunStream> {
    const stream = new RunStream(ctx, runId);
    // Counted against the tenant's stream limit before any work (a 429 is still a JSON error).
    stream.release = await ctx.sseLimiter.acquire(tenantId);
    try {
      // A run only the archive still has: its whole log is the backlog, nothing comes live.
      const opened = await ctx.service.openEvents(tenantId, runId, afterSeq);
      if (opened.archived) stream.buffer = opened.events;
      else
        stream.unsubscribe = await opened.follow({
          onEvent: (event) => stream.onEvent(event),
          onRewound: () => stream.onRewound(),
        });
    } catch (error) {
      stream.release();
      stream.release = null;
      throw error;
    }
    return stream;
  }

  /** Drops the subscription without having written anything (the caller answers with JSON). */
  async detach(): Promise<void> {
    this.finished = true;
    this.release?.();
    this.release = null;
    await this.unsubscribe?.().catch(() => undefined);
  }

  /** Writes the headers, flushes the buffered events and streams until the sink is done. */
  open(res: Response, headers: Readonly<Record<string, string>>, sink: FrameSink): void {
    if (this.finished) return;
    const release = this.release ?? ((): void => undefined);
    this.release = null;
    this.sink = sink;
    const conn = new SseConnection(this.ctx, res, release, headers);
    this.conn = conn;
    // The connection's finish (the client left, shutdown, the buffer limit) ends this stream.
    if (this.unsubscribe !== null) void conn.adopt(this.unsubscribe);
    this.unsubscribe = null;
    conn.onFinish = () => this.finish();
    if (res.destroyed || res.closed) {
      this.finish(); // the client left while the run was being prepared
      return;
    }
    const backlog = this.buffer;
    this.buffer = [];
    for (const event of backlog) {
      if (this.finished) break;
      this.deliver(event);
    }
    if (this.rewound) this.onRewound();
  }

  /** The run's log lost events this stream had (Redis restarted): say so and end. */
  private onRewound(): void {
    if (this.finished) return;
    if (this.sink === null) {
      this.rewound = true;
      return;
    }
    for (const frame of this.sink.error(REWOUND_MESSAGE)) this.write(frame);
    this.finish(false);
  }

  private onEvent(event: RunEvent): void {
    if (this.finished) return;
    if (this.sink === null) this.buffer.push(event);
    else this.deliver(event);
  }

  private deliver(event: RunEvent): void {
    const sink = this.sink!;
    try {
      for (const frame of sink.map(event)) this.write(frame);
    } catch (error) {
      this.conn?.res.req.log?.error({ err: error, runId: this.runId }, 'protocol mapping failed');
      for (const frame of sink.error('internal error while streaming the run')) this.write(frame);
      this.finish(false);
      return;
    }
    this.ctx.metrics.sseEventLag.observe(Math.max(0, Date.now() - event.at) / 1000);
    if (sink.done) this.finish();
    else if (this.conn?.overBuffered() === true) this.finish(false);
  }

  private write(frame: string): void {
    this.conn?.stream.write(frame);
  }

  /** Ends the response (closing frames unless the sink already finished) and unsubscribes. */
  finish(closeFrames = true): void {
    if (this.finished) return;
    this.finished = true;
    const { sink, conn } = this;
    // On the connection's own finish too (shutdown, the client left): before its stream closes.
    if (sink !== null && conn !== null && !conn.stream.closed) {
      if (closeFrames && !sink.done) for (const frame of sink.end()) this.write(frame);
      if (sink.trailer !== undefined) this.write(sink.trailer);
    }
    conn?.finish();
    this.release?.();
    this.release = null;
    const unsubscribe = this.unsubscribe;
    if (unsubscribe !== null) void unsubscribe().catch(() => undefined);
  }
}

/** Writes a complete one-shot SSE response (e.g. AG-UI's RUN_ERROR for a refused input). */
export function sendFrames(
  res: Response,
  headers: Readonly<Record<string, string>>,
  frames: readonly string[],
): void {
  res.status(200);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.end(frames.join(''));
}
