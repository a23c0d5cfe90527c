import { Cluster } from 'ioredis';
import { SUBSCRIBER_OPTIONS, duplicateClient } from './connection.ts';
import type { RunEvent } from '@baton/protocol';
import type { RedisClient } from './scripts.ts';
import { decodeEventPayload } from './event-payload.ts';
import { EventGapError } from '../errors/event-gap-error.ts';
import { EventLogRewoundError, type EventLogRewound } from '../errors/event-log-rewound-error.ts';
import { coalesceWrites } from '../internals/ioredis/write-coalescing.ts';

/** Where the subscriber reads a run's durable log and finds its channel (RedisRunStore). */
export interface RunEventSource {
  readEvents(runId: string, afterSeq?: number, limit?: number): Promise<RunEvent[]>;
  /** Seq of the run's last event (0 when none). */
  lastSeq(runId: string): Promise<number>;
  channelOf(runId: string): string;
}

export type RunEventListener = (event: RunEvent) => void | Promise<void>;

export interface SubscribeOptions {
  /**
   * Redis came back without events this listener was given (a restart from a truncated AOF, a
   * failover): the seqs after the loss are reused for other events, so delivery stops for good
   * and this is called once; the consumer must tell its client to read the run again. Without
   * it, the rewind is reported to onError (EventLogRewoundError) and delivery goes on.
   */
  readonly onRewound?: (rewound: EventLogRewound) => void;
}

export interface RunEventSubscriberOptions {
  /**
   * A connection to duplicate for the dedicated subscriber connection (the subscriber owns and
   * quits the duplicate), or pass `subscriber` to provide that connection yourself.
   */
  readonly redis?: RedisClient;
  /**
   * Dedicated connection used only for SSUBSCRIBE; not quit by close() when passed in. A Cluster
   * must have been created with `shardedSubscribers: true` (each SSUBSCRIBE then goes to the node
   * that owns the channel's slot).
   */
  readonly subscriber?: RedisClient;
  readonly source: RunEventSource;
  /** Listener errors, Redis errors during catch-up, and unrecoverable gaps (stream expired). */
  readonly onError?: (err: unknown, runId: string) => void;
  /**
   * Every live message of a subscribed run, before it is delivered to the run's listeners.
   * `decode()` is the payload's events, decoded at most once for this callback and the listeners
   * (it throws on a payload that is not events).
   */
  readonly onMessage?: (message: string, decode: () => RunEvent[]) => void;
}

/** How long a verification after a reconnect tries to read the log: 100 × 100 ms. */
const VERIFY_ATTEMPTS = 100;
const VERIFY_RETRY_MS = 100;
/** How long to wait before sending a refused re-subscription again (a node still failing over). */
const RESUBSCRIBE_RETRY_MS = 250;

/**
 * The dedicated subscriber connection. A Cluster's duplicate gets ioredis' sharded subscribers:
 * one connection per master, each SSUBSCRIBE sent to the owner of the channel's slot and sent
 * again to the new owner after a failover or a slot migration. The cluster-level offline queue
 * lets a subscription made before the cluster is ready wait for it instead of failing. A single
 * connection coalesces its writes like the main one: an API under load opens and closes streams
 * in bursts, and each SSUBSCRIBE / SUNSUBSCRIBE was a write system call of its own (≈ 3 % of the
 * API's busy time under api-throughput); same commands, same order, sent by the end of the turn.
 */
function subscriberConnection(redis: RedisClient): RedisClient {
  if (redis instanceof Cluster)
    return redis.duplicate(undefined, {
      ...redis.options,
      shardedSubscribers: true,
      enableOfflineQueue: true,
      redisOptions: { ...redis.options.redisOptions, ...SUBSCRIBER_OPTIONS },
    });
  const sub = duplicateClient(redis, SUBSCRIBER_OPTIONS);
  coalesceWrites(sub);
  return sub;
}

/** One consumer of one run: delivers a gapless, ordered, duplicate-free sequence. */
class Listener {
  readonly runId: string;
  private readonly channelName: string;
  private readonly onEvent: RunEventListener;
  private readonly onRewound: SubscribeOptions['onRewound'];
  private readonly owner: RunEventSubscriber;
  private last: number;
  /** The event delivered last (undefined: none yet, `last` is where the consumer started). */
  private lastEvent: RunEvent | undefined;
  private closed = false;
  /** Every delivery step runs on this chain, so catch-up, gap fills and live events never interleave. */
  private chain: Promise<void> = Promise.resolve();
  /** Steps queued on the chain and not settled yet (0: the chain is idle). */
  private pending = 0;

  constructor(
    owner: RunEventSubscriber,
    runId: string,
    channelName: string,
    afterSeq: number,
    onEvent: RunEventListener,
    onRewound?: SubscribeOptions['onRewound'],
  ) {
    this.owner = owner;
    this.runId = runId;
    this.channelName = channelName;
    this.last = afterSeq;
    this.onEvent = onEvent;
    this.onRewound = onRewound;
  }

  get lastDelivered(): number {
    return this.last;
  }

  close(): void {
    this.closed = true;
  }

  /**
   * What subscribe() hands back: a function of the listener itself (not of subscribe()'s scope,
   * which would otherwise be kept for as long as the subscription is).
   */
  readonly unsubscribe = async (): Promise<void> => {
    this.close();
    await this.owner.removeListener(this.channelName, this);
  };

  /** Queue a step; the returned promise settles when the step ran (never rejects). */
  enqueue(step: () => Promise<void>): Promise<void> {
    this.pending += 1;
    const run = this.chain.then(async () => {
      try {
        if (!this.closed) await step();
      } catch (err) {
        this.owner.reportError(err, this.runId);
      } finally {
        this.pending -= 1;
      }
    });
    this.chain = run;
    return run;
  }

  /** Read everything after the last delivered event from the stream (backlog / reconnect). */
  catchUp(): Promise<void> {
    return this.enqueue(async () => {
      const backlog = await this.owner.source.readEvents(this.runId, this.last);
      for (const event of backlog) await this.deliver(event);
    });
  }

  /**
   * After a reconnect, before anything else is delivered: is the last delivered event still the
   * log's event of that seq? Redis may be back from an older past (its suffix lost, maybe already
   * regrown with other events under the same seqs), and a consumer that carried on would mix two
   * histories without knowing.
   */
  verify(): Promise<void> {
    return this.enqueue(async () => {
      if (this.last === 0) return;
      // The reads' connection may come back a little after this one (an API's fails fast).
      const [stored] = await this.untilReachable(() =>
        this.owner.source.readEvents(this.runId, this.last - 1, 1),
      );
      const same =
        stored !== undefined &&
        stored.seq === this.last &&
        (this.lastEvent === undefined || JSON.stringify(stored) === JSON.stringify(this.lastEvent));
      if (same) return;
      const rewound = {
        delivered: this.last,
        lastSeq: await this.untilReachable(() => this.owner.source.lastSeq(this.runId)),
      };
      if (this.onRewound === undefined) {
        this.owner.reportError(new EventLogRewoundError(this.runId, rewound), this.runId);
        // Carry on from what the log holds now: what was delivered stays delivered.
        this.lastEvent = undefined;
        return;
      }
      this.closed = true;
      this.onRewound(rewound);
    });
  }

  private async untilReachable<T>(read: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await read();
      } catch (err) {
        if (this.closed || attempt >= VERIFY_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, VERIFY_RETRY_MS));
      }
    }
  }

  /** A live message: drop if already delivered, fill the gap from the stream if one is missing. */
  live(event: RunEvent): void {
    // The usual case, the next event while nothing is queued: delivered now, without a step on
    // the chain (its promises, per event and subscriber, were most of a fanned-out frame's cost).
    // Same order and same exactly-once as the chain: nothing is ahead of it.
    if (this.pending === 0 && !this.closed && event.seq <= this.last + 1) {
      if (event.seq === this.last + 1) this.deliverNow(event);
      return;
    }
    void this.enqueue(async () => {
      if (event.seq <= this.last) return;
      if (event.seq > this.last + 1) {
        const from = this.last + 1;
        const missing = await this.owner.source.readEvents(
          this.runId,
          this.last,
          event.seq - this.last - 1,
        );
        for (const e of missing) if (e.seq < event.seq) await this.deliver(e);
        if (this.last < event.seq - 1) {
          // Committed events are in the stream before they are published, so this only happens
          // when the stream expired or was trimmed: report it and carry on.
          this.owner.reportError(new EventGapError(this.runId, from, event.seq - 1), this.runId);
        }
      }
      await this.deliver(event);
    });
  }

  /** deliver() run synchronously; a listener that returns a promise holds the chain until it settles. */
  private deliverNow(event: RunEvent): void {
    this.last = event.seq;
    this.lastEvent = event;
    let result: void | Promise<void>;
    try {
      result = this.onEvent(event);
    } catch (err) {
      this.owner.reportError(err, this.runId);
      return;
    }
    if (result === undefined) return;
    const settled = Promise.resolve(result).catch((err: unknown) => {
      this.owner.reportError(err, this.runId);
    });
    void this.enqueue(() => settled);
  }

  private async deliver(event: RunEvent): Promise<void> {
    if (this.closed || event.seq <= this.last) return;
    this.last = event.seq;
    this.lastEvent = event;
    try {
      await this.onEvent(event);
    } catch (err) {
      this.owner.reportError(err, this.runId);
    }
  }
}

interface Channel {
  readonly runId: string;
  readonly listeners: Set<Listener>;
  /** Resolves once the server confirmed SSUBSCRIBE. */
  readonly ready: Promise<void>;
}

/**
 * Fan-in of run events for SSE/websocket/terminal consumers.
 *
 * One dedicated subscriber, one SSUBSCRIBE per run with listeners (reference-counted: the channel
 * is unsubscribed when its last listener leaves). A run's channel is sharded pub/sub: the commit
 * scripts SPUBLISH to it, so on a Redis Cluster a message only travels from the run's master to
 * the subscribers connected to that master (ioredis' sharded subscribers: one connection per
 * master), and on a standalone Redis one connection carries every channel.
 * subscribe(runId, afterSeq) is gap-free: the listener is registered and the channel subscribed
 * FIRST, then the backlog is read from the stream; live messages queue behind the backlog and
 * are delivered only when seq > last delivered. A live message that skips ahead triggers a read
 * of the missing range from the stream first. The run store XADDs and SPUBLISHes each event in
 * one script, so every event is either in the backlog or arrives live. After a reconnect (and on
 * a Cluster after the subscriptions moved to another node: a failover, a slot migration) every
 * listener catches up from the stream again once its channel is subscribed anew.
 */
export class RunEventSubscriber {
  readonly source: RunEventSource;
  private readonly sub: RedisClient;
  private readonly cluster: boolean;
  private readonly ownsConnection: boolean;
  private readonly onError: ((err: unknown, runId: string) => void) | undefined;
  private readonly tap: ((message: string, decode: () => RunEvent[]) => void) | undefined;
  private readonly channels = new Map<string, Channel>();
  private closed = false;
  private connectedOnce = false;
  /** Bumped by every re-subscription pass: an older pass that is still retrying gives up. */
  private resubscription = 0;

  constructor(opts: RunEventSubscriberOptions) {
    this.source = opts.source;
    this.onError = opts.onError;
    this.tap = opts.onMessage;
    if (opts.subscriber) {
      this.sub = opts.subscriber;
      this.ownsConnection = false;
    } else if (opts.redis) {
      this.sub = subscriberConnection(opts.redis);
      this.ownsConnection = true;
    } else {
      throw new Error('RunEventSubscriber: pass redis (to duplicate) or subscriber');
    }
    this.cluster = this.sub instanceof Cluster;
    if (this.sub instanceof Cluster && this.sub.options.shardedSubscribers !== true)
      throw new Error('RunEventSubscriber: a Cluster subscriber needs shardedSubscribers: true');
    this.sub.on('smessage', this.onMessage);
    // A Cluster tells when its sharded subscribers were (re)created and re-subscribed; a single
    // connection, when it reconnected (ioredis re-sent its SSUBSCRIBEs).
    if (this.cluster) this.sub.on('subscribersReady', this.onResubscribed);
    else this.sub.on('ready', this.onReady);
    // Connection errors are retried by ioredis (and reported by the main client); an unhandled
    // 'error' event would only spam stderr during an outage.
    if (this.ownsConnection) this.sub.on('error', () => undefined);
    if (this.sub.status === 'ready') this.connectedOnce = true;
  }

  /** Number of runs currently subscribed (observability/tests). */
  get activeChannels(): number {
    return this.channels.size;
  }

  /**
   * Deliver every event of `runId` with seq > afterSeq to onEvent, in order, exactly once, then
   * live events until the returned unsubscribe function is called. Resolves once the backlog has
   * been delivered.
   */
  async subscribe(
    runId: string,
    afterSeq: number,
    onEvent: RunEventListener,
    opts: SubscribeOptions = {},
  ): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('RunEventSubscriber is closed');
    const name = this.source.channelOf(runId);
    let channel = this.channels.get(name);
    if (!channel) {
      const ready = this.sub.ssubscribe(name).then(() => undefined);
      channel = { runId, listeners: new Set(), ready };
      this.channels.set(name, channel);
    }
    const listener = new Listener(
      this,
      runId,
      name,
      Math.max(0, afterSeq),
      onEvent,
      opts.onRewound,
    );
    channel.listeners.add(listener);
    const unsubscribe = listener.unsubscribe;
    try {
      await channel.ready;
    } catch (err) {
      await unsubscribe();
      throw err;
    }
    await listener.catchUp();
    return unsubscribe;
  }

  /** Unsubscribe everything and quit the connection if this subscriber created it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const channel of this.channels.values()) for (const l of channel.listeners) l.close();
    const names = [...this.channels.keys()];
    this.channels.clear();
    this.sub.off('smessage', this.onMessage);
    this.sub.off('subscribersReady', this.onResubscribed);
    this.sub.off('ready', this.onReady);
    if (this.ownsConnection) {
      // QUIT waits in the offline queue for a Redis that may never come back: hang up instead.
      if (this.sub.status === 'ready') await this.sub.quit();
      else this.sub.disconnect();
    } else {
      // On a Cluster the channels of one SUNSUBSCRIBE must share a slot: one per channel.
      await Promise.all(names.map((name) => this.sub.sunsubscribe(name)));
    }
  }

  /** @internal */
  reportError(err: unknown, runId: string): void {
    if (this.onError) this.onError(err, runId);
  }

  /** @internal */
  async removeListener(name: string, listener: Listener): Promise<void> {
    const channel = this.channels.get(name);
    if (!channel || !channel.listeners.delete(listener)) return;
    if (channel.listeners.size > 0) return;
    this.channels.delete(name);
    if (this.closed) return;
    // Issued synchronously after the map entry is gone: a later subscribe() for the same run sends
    // its SSUBSCRIBE after this SUNSUBSCRIBE on the same connection, so it ends up subscribed.
    await this.sub.sunsubscribe(name);
  }

  private readonly onMessage = (name: string, message: string): void => {
    const channel = this.channels.get(name);
    if (!channel || channel.listeners.size === 0) return;
    let decoded: RunEvent[] | undefined;
    const decode = (): RunEvent[] => (decoded ??= decodeEventPayload(message));
    if (this.tap) {
      try {
        this.tap(message, decode);
      } catch {
        // the tap's own failure is not the listeners' concern
      }
    }
    let events: RunEvent[];
    try {
      events = decode();
    } catch (err) {
      this.reportError(err, channel.runId);
      return;
    }
    for (const event of events) for (const listener of channel.listeners) listener.live(event);
  };

  /** ioredis re-subscribes on reconnect; whatever was published meanwhile is read from the stream. */
  private readonly onReady = (): void => {
    if (!this.connectedOnce) {
      this.connectedOnce = true;
      return;
    }
    this.resubscribe();
  };

  /**
   * A Cluster's sharded subscribers changed (first connection, failover, slot migration, a node's
   * subscriber connection lost): ioredis sent SSUBSCRIBE to the new owners, but without waiting for
   * them, and messages published between the old subscription's end and the new one's are lost.
   */
  private readonly onResubscribed = (): void => {
    this.resubscribe();
  };

  /**
   * Every listener checks the log still holds what it delivered, then, once its channel is
   * confirmed subscribed by a SSUBSCRIBE of our own (answered after any that ioredis re-sent on
   * the same connection), catches up from the stream: no live message can fall between the two.
   * A refused SSUBSCRIBE (the slot's new owner not reachable yet) is sent again until it is
   * answered or a newer pass replaces this one.
   */
  private resubscribe(): void {
    const names = [...this.channels.keys()];
    if (names.length === 0) return;
    const pass = (this.resubscription += 1);
    // Queued now, ahead of any message of the new connection: Redis may have restarted.
    for (const channel of this.channels.values())
      for (const l of channel.listeners) void l.verify();
    const resubscribed = (name: string): void => {
      const channel = this.channels.get(name);
      if (channel) for (const l of channel.listeners) void l.catchUp();
    };
    if (!this.cluster) {
      this.sub.ssubscribe(...names).then(
        () => names.forEach(resubscribed),
        (err: unknown) => {
          for (const name of names) this.reportError(err, this.channels.get(name)?.runId ?? '');
        },
      );
      return;
    }
    // On a Cluster the channels of one SSUBSCRIBE must share a slot: one per channel.
    const attempt = (name: string): void => {
      if (this.closed || pass !== this.resubscription || !this.channels.has(name)) return;
      this.sub.ssubscribe(name).then(
        () => resubscribed(name),
        () => setTimeout(() => attempt(name), RESUBSCRIBE_RETRY_MS).unref(),
      );
    };
    names.forEach(attempt);
  }
}
