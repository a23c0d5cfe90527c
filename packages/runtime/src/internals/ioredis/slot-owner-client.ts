import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { AbstractConnector, Redis, type Cluster, type RedisOptions } from 'ioredis';

/** Reconnect delays of a slot owner connection: short, so a promoted master is reached at once. */
function ownerReconnectDelay(times: number): number {
  const base = Math.min(50 * 2 ** Math.min(times, 5), 400);
  return Math.round(base * (0.8 + Math.random() * 0.2));
}

/** Connections re-reading the slot map within this window share one CLUSTER SLOTS. */
const REFRESH_SHARED_MS = 200;
/** A refresh that takes longer than this is not waited for (the next attempt asks again). */
const REFRESH_WAIT_MS = 1_500;

const refreshes = new WeakMap<Cluster, { readonly at: number; readonly done: Promise<void> }>();

/** Re-reads the cluster's slot map, once for every connection that asks within a short window. */
function refreshSlots(cluster: Cluster): Promise<void> {
  const last = refreshes.get(cluster);
  if (last && Date.now() - last.at < REFRESH_SHARED_MS) return last.done;
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, REFRESH_WAIT_MS);
    timer.unref();
    cluster.refreshSlotsCache(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  refreshes.set(cluster, { at: Date.now(), done });
  return done;
}

/** The master serving `slot` in the cluster's slot map (node keys are "host:port"). */
function ownerOf(cluster: Cluster, slot: number): { host: string; port: number } | undefined {
  const key = cluster.slots[slot]?.[0];
  if (key === undefined) return undefined;
  const colon = key.lastIndexOf(':');
  return { host: key.slice(0, colon), port: Number(key.slice(colon + 1)) };
}

/** ioredis' connector for a connection that goes wherever `slot` is served now. */
function ownerConnector(
  cluster: Cluster,
  slot: number,
  tls: ConnectionOptions | undefined,
): NonNullable<RedisOptions['Connector']> {
  return class SlotOwnerConnector extends AbstractConnector {
    private connects = 0;

    constructor(options: unknown) {
      super((options as RedisOptions).disconnectTimeout ?? 2_000);
    }

    async connect(): Promise<Socket | TLSSocket> {
      this.connecting = true;
      // Every connection after the first may follow a failover or a moved slot: ask again.
      if (this.connects++ > 0 || ownerOf(cluster, slot) === undefined) await refreshSlots(cluster);
      const node = ownerOf(cluster, slot);
      if (!this.connecting) throw new Error('Connection is closed.');
      if (node === undefined) throw new Error(`Cluster isn't ready: no master serves slot ${slot}`);
      const stream = tls
        ? tlsConnect({ ...tls, host: node.host, port: node.port })
        : netConnect({ host: node.host, port: node.port });
      stream.once('error', (err: Error) => {
        this.firstError = err;
      });
      this.stream = stream;
      return stream;
    }
  };
}

const REDIRECTED = /^(MOVED|ASK) /;

/** A one-node connection that reconnects (to the slot's owner now) when told the slot moved. */
class SlotOwnerRedis extends Redis {
  override sendCommand(command: Parameters<Redis['sendCommand']>[0], stream?: never): unknown {
    const sent = super.sendCommand(command, stream);
    command.promise.catch((error: unknown) => {
      if (error instanceof Error && REDIRECTED.test(error.message) && this.status === 'ready')
        this.disconnect(true);
    });
    return sent;
  }
}

/**
 * One connection to the master that serves `slot` of a cluster, for a BullMQ Worker's blocking
 * command (BZPOPMIN on its queue's marker). A `Cluster` client for it opened connections to
 * most nodes (the slot-map reads and ready checks of each go to a random node, replicas
 * included): 16 queue shards made an idle worker hold over 100 connections. This one holds
 * exactly one; it finds the owner in `cluster`'s slot map, re-read on every reconnect, and
 * reconnects when a reply says the slot moved (a failover, a resharding). Commands wait
 * through reconnects and are sent again (a blocking connection has maxRetriesPerRequest null).
 */
export function slotOwnerClient(cluster: Cluster, slot: number, connectionName: string): Redis {
  const { tls, replyMapping: _resp, ...node } = cluster.options.redisOptions ?? {};
  return new SlotOwnerRedis({
    ...node,
    connectionName,
    Connector: ownerConnector(cluster, slot, tls),
    retryStrategy: ownerReconnectDelay,
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    lazyConnect: false,
  });
}
