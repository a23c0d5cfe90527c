import {
  EventBodySchema,
  EventEnvelopeSchema,
  RunEventSchema,
  endsStream,
  type RunEvent,
  type StreamUntil,
} from '@baton/protocol';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import { backoffDelay, shouldGiveUp, type ReconnectPolicy } from './backoff.ts';
import { BatonApiError, BatonClientError, errorFromResponse } from './errors.ts';
import { wrapFetchError, type Transport } from './transport.ts';

/** Where a run's event stream ends. */
export type { StreamUntil } from '@baton/protocol';

export interface StreamOptions {
  /** Start after this sequence number (default 0: from the first event). */
  readonly after?: number;
  /**
   * `done` (default): follow the run to its end, through any waits for decisions.
   * `suspended`: also end when the run starts waiting for a decision.
   */
  readonly until?: StreamUntil;
  /** Stops the stream; the iterator then throws an `aborted` error. */
  readonly signal?: AbortSignal;
  readonly reconnect?: ReconnectPolicy;
  /**
   * A connection that delivers no byte (not even the API's heartbeat comment) for this long is
   * considered dead and replaced (default 45 000 ms; the API sends a heartbeat every 15 s).
   */
  readonly idleTimeoutMs?: number;
  /** Called before each reconnect attempt, e.g. to show "reconnecting…". */
  readonly onReconnect?: (info: ReconnectInfo) => void;
  /** Source of randomness for the jitter (tests pass a seeded one). */
  readonly random?: () => number;
  /**
   * Follow the run's whole tree (`?children=1`): its events and every descendant's (agent
   * tools), each event's `runId` saying whose. Only with `until: 'done'` (the API refuses a tree
   * stream that stops at a wait: watch `run.finished` events with `status: 'waiting'` instead).
   */
  readonly children?: boolean;
}

export interface ReconnectInfo {
  /** Consecutive failed attempts so far (1 for the first reconnect after a failure). */
  readonly attempt: number;
  readonly delayMs: number;
  /** Why the previous connection ended. */
  readonly error: unknown;
  /** The last sequence number received; the next connection asks for what follows it. */
  readonly lastSeq: number;
}

/** The protocol's rule for a stream's last event, offered here too for hand-rolled readers. */
export { endsStream } from '@baton/protocol';

/** Whether a failed connection is worth another attempt (the API or the network may come back). */
export function isRetryable(error: unknown): boolean {
  if (BatonApiError.isInstance(error))
    return error.status >= 500 || error.status === 429 || error.status === 408;
  if (BatonClientError.isInstance(error))
    return (
      error.code === 'network' ||
      error.code === 'timeout' ||
      error.code === 'stream_gap' ||
      (error.code === 'unexpected_response' && (error.status ?? 0) >= 500)
    );
  return false;
}

/**
 * The events of one run as an async iterator that survives API restarts and network failures:
 * it reconnects with `Last-Event-ID` (the last sequence number it yielded), with backoff and
 * jitter, until its {@link ReconnectPolicy} gives up. Events are yielded exactly once and in
 * order: a replayed sequence number is dropped, a skipped one makes it reconnect to fetch it.
 *
 * ```ts
 * for await (const event of client.runs.stream(runId)) console.log(event.seq, event.type);
 * ```
 */
export class RunEventStream implements AsyncIterable<RunEvent> {
  readonly runId: string;
  private readonly transport: Transport;
  private readonly opts: StreamOptions;
  private started = false;
  /** Sequence number of the last event yielded (of the root run, on a tree stream). */
  lastSeq: number;
  /** Tree streams: the last event yielded per run of the tree (the root's is lastSeq). */
  private readonly seqs = new Map<string, number>();
  /** Tree streams: the composite SSE id of the last event yielded (resumes every run's log). */
  private treeCursor: string | undefined;
  /** Tree streams: runs whose `run.finished` (done) was yielded. */
  private readonly ended = new Set<string>();
  /** Connections opened after the first one. */
  reconnects = 0;
  /** Events received again after a reconnect and dropped. */
  duplicatesDropped = 0;
  /** Events of types a newer API sends and this client does not know, skipped in order. */
  unknownSkipped = 0;

  constructor(transport: Transport, runId: string, opts: StreamOptions = {}) {
    this.transport = transport;
    this.runId = runId;
    this.opts = opts;
    this.lastSeq = opts.after ?? 0;
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    // One pass per stream object: a second loop would silently start from lastSeq.
    if (this.started) throw new Error('a RunEventStream can be iterated once; call stream() again');
    this.started = true;
    return this.events();
  }

  private async *events(): AsyncGenerator<RunEvent, void, undefined> {
    const until = this.opts.until ?? 'done';
    const policy = this.opts.reconnect ?? {};
    const random = this.opts.random ?? Math.random;
    const signal = this.opts.signal;
    let failures = 0;
    let failingSince = 0;
    let everYielded = false;
    for (;;) {
      if (signal?.aborted) throw abortedError(signal, this.runId);
      let cause: unknown;
      try {
        const connection = this.connect(until);
        let yielded = 0;
        for await (const { event, id } of connection) {
          const runId = this.opts.children ? event.runId : this.runId;
          const seen = runId === this.runId ? this.lastSeq : (this.seqs.get(runId) ?? 0);
          if (event.seq <= seen) {
            this.duplicatesDropped += 1;
            continue;
          }
          if (event.seq !== seen + 1)
            throw new BatonClientError(
              'stream_gap',
              `run ${runId}: expected event ${seen + 1}, got ${event.seq}`,
            );
          if (runId === this.runId) this.lastSeq = event.seq;
          else this.seqs.set(runId, event.seq);
          if ('unknown' in event) {
            if (this.opts.children && id !== undefined && id !== '') this.treeCursor = id;
            this.unknownSkipped += 1;
            continue;
          }
          if (this.opts.children) {
            if (id !== undefined && id !== '') this.treeCursor = id;
            if (event.type === 'child_run.linked' && !this.seqs.has(event.link.childRunId))
              this.seqs.set(event.link.childRunId, 0);
            if (event.type === 'run.finished' && event.status === 'done') this.ended.add(runId);
          }
          failures = 0;
          yielded += 1;
          everYielded = true;
          yield event;
          if (!this.opts.children && endsStream(event, until)) return;
        }
        if (connection.ended === 'no_content') return;
        // The API closes a tree stream once the root and every descendant it linked are done
        // (a linked child that never came to be sends nothing): after the root's end, a clean
        // close that every followed run ended before, or that had nothing more, is the end.
        if (
          this.opts.children &&
          connection.ended === 'closed' &&
          this.ended.has(this.runId) &&
          (yielded === 0 || [...this.seqs.keys()].every((id) => this.ended.has(id)))
        )
          return;
        // A first connection that closes with nothing: the tree was over before `after`.
        if (this.opts.children && connection.ended === 'closed' && !everYielded) return;
        cause = new BatonClientError(
          'network',
          `run ${this.runId}: the event stream ended before the run ${until === 'done' ? 'finished' : 'finished or suspended'}`,
        );
      } catch (error) {
        if (signal?.aborted) throw abortedError(signal, this.runId);
        if (!isRetryable(error)) throw error;
        cause = error;
      }
      failures += 1;
      if (failures === 1) failingSince = Date.now();
      if (shouldGiveUp(policy, failures, Date.now() - failingSince))
        throw new BatonClientError(
          'reconnect_exhausted',
          `run ${this.runId}: gave up reconnecting after ${failures - 1} attempt(s): ${errorText(cause)}`,
          { cause },
        );
      const retryAfter = BatonApiError.isInstance(cause) ? (cause.retryAfterMs ?? 0) : 0;
      const delayMs = Math.max(retryAfter, backoffDelay(policy, failures, random()));
      this.opts.onReconnect?.({ attempt: failures, delayMs, error: cause, lastSeq: this.lastSeq });
      await sleep(delayMs, signal);
      this.reconnects += 1;
    }
  }

  /** One connection: its parsed events, then `ended` says how it ended. */
  private connect(until: StreamUntil): Connection {
    const after = this.opts.children
      ? (this.treeCursor ?? String(this.lastSeq))
      : String(this.lastSeq);
    return new Connection(this.transport, this.runId, after, until, this.opts);
  }
}

/** One HTTP response of GET /v1/runs/:id/events, read to its end (or until dropped). */
class Connection implements AsyncIterable<{
  event: RunEvent | UnknownEvent;
  id: string | undefined;
}> {
  ended: 'no_content' | 'closed' | undefined;
  private readonly transport: Transport;
  private readonly runId: string;
  /** The Last-Event-ID to send: a seq, or a tree stream's composite cursor. */
  private readonly after: string;
  private readonly until: StreamUntil;
  private readonly opts: StreamOptions;

  constructor(
    transport: Transport,
    runId: string,
    after: string,
    until: StreamUntil,
    opts: StreamOptions,
  ) {
    this.transport = transport;
    this.runId = runId;
    this.after = after;
    this.until = until;
    this.opts = opts;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<
    { event: RunEvent | UnknownEvent; id: string | undefined },
    void,
    undefined
  > {
    const controller = new AbortController();
    const signal = this.opts.signal
      ? AbortSignal.any([this.opts.signal, controller.signal])
      : controller.signal;
    const idleMs = this.opts.idleTimeoutMs ?? 45_000;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const armIdle = (): void => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(
        () =>
          controller.abort(
            new BatonClientError('timeout', `no data on the event stream for ${idleMs} ms`),
          ),
        idleMs,
      );
    };
    const what = `GET /v1/runs/${this.runId}/events`;
    try {
      armIdle();
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      // The header (not ?after=) so that proxies and the API treat it as a resumption.
      if (this.after !== '0') headers['last-event-id'] = this.after;
      let res: Response;
      try {
        res = await this.transport.fetch(
          this.transport.url(`/v1/runs/${encodeURIComponent(this.runId)}/events`, {
            until: this.until,
            ...(this.opts.children ? { children: '1' } : {}),
          }),
          { method: 'GET', headers, signal, cache: 'no-store' },
        );
      } catch (error) {
        // Our own idle timer fired: a timeout (retryable), not the caller's abort.
        if (!this.opts.signal?.aborted && BatonClientError.isInstance(controller.signal.reason))
          throw controller.signal.reason;
        throw error;
      }
      if (res.status === 204) {
        this.ended = 'no_content';
        return;
      }
      if (!res.ok) throw await errorFromResponse(res);
      if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream') || !res.body)
        throw new BatonClientError('unexpected_response', `${what}: not an event stream`, {
          status: res.status,
        });
      const queue: EventSourceMessage[] = [];
      const parser = createParser({ onEvent: (message) => queue.push(message) });
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      try {
        for (;;) {
          let chunk: { done: boolean; value?: Uint8Array | undefined };
          try {
            chunk = await reader.read();
          } catch (error) {
            throw wrapFetchError(
              signal.aborted && BatonClientError.isInstance(signal.reason) ? signal.reason : error,
              this.opts.signal,
              what,
            );
          }
          if (chunk.done) break;
          armIdle();
          parser.feed(decoder.decode(chunk.value, { stream: true }));
          while (queue.length > 0) {
            const message = queue.shift()!;
            yield { event: parseEvent(message, what), id: message.id };
          }
        }
      } finally {
        // Dropping the connection (consumer stopped, error) must not leave the socket open.
        controller.abort();
        reader.releaseLock();
      }
      this.ended = 'closed';
    } finally {
      clearTimeout(idleTimer);
      controller.abort();
    }
  }
}

/**
 * An event of a type this client's release does not know (a newer API's): its envelope is kept so
 * the stream's sequence stays whole, and it is not yielded, so callers' exhaustive switches over
 * `RunEvent` never meet a type they were not compiled against.
 */
interface UnknownEvent {
  readonly unknown: true;
  readonly seq: number;
  readonly runId: string;
  readonly type: string;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(
  EventBodySchema.options.map((option) => option.shape.type.value),
);

const UnknownEventSchema = EventEnvelopeSchema.extend({ type: z.string() });

function parseEvent(message: EventSourceMessage, what: string): RunEvent | UnknownEvent {
  let json: unknown;
  try {
    json = JSON.parse(message.data);
  } catch (error) {
    throw new BatonClientError('unexpected_response', `${what}: an event is not JSON`, {
      cause: error,
    });
  }
  const parsed = RunEventSchema.safeParse(json);
  if (!parsed.success) {
    const envelope = UnknownEventSchema.safeParse(json);
    if (envelope.success && !KNOWN_TYPES.has(envelope.data.type))
      return {
        unknown: true,
        seq: envelope.data.seq,
        runId: envelope.data.runId,
        type: envelope.data.type,
      };
    throw new BatonClientError(
      'unexpected_response',
      `${what}: an event does not match the protocol (${parsed.error.issues[0]?.message ?? '?'})`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

function abortedError(signal: AbortSignal, runId: string): BatonClientError {
  return new BatonClientError('aborted', `run ${runId}: the event stream was aborted`, {
    cause: signal.reason,
  });
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortedError(signal, ''));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(
        new BatonClientError('aborted', 'the event stream was aborted', { cause: signal?.reason }),
      );
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
