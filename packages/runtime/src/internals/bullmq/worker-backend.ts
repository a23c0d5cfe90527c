import { Cluster } from 'ioredis';
import {
  QueueKeys,
  RedisConnection,
  RedisQueueBackend,
  createRedisBackend,
  type BackendFactory,
  type KeyPrefixOptions,
} from 'bullmq';
import { keySlot } from '../../queue-shards.ts';
import { slotOwnerClient } from '../ioredis/slot-owner-client.ts';

/**
 * A Worker's backend on a cluster: its blocking connection is a slot owner connection (see
 * slot-owner-client.ts), and the queue is looked at again as soon as that connection is back.
 */
class SlotOwnerBackend extends RedisQueueBackend {
  /** The blocking command failed: the queue's marker may have gone with it. */
  private disturbed = false;
  private readonly cluster: Cluster;

  constructor(cluster: Cluster, ...args: ConstructorParameters<typeof RedisQueueBackend>) {
    super(...args);
    this.cluster = cluster;
  }

  /**
   * A failed BZPOPMIN (CLUSTERDOWN, a moved slot, a master gone) makes BullMQ block again, up to
   * its drain delay, before it looks at the queue: jobs waiting since (or whose marker a lost
   * reply took) would wait that long after the cluster is back. Setting the marker first, as
   * adding a job does, makes the next wait return at once. It goes through the shared
   * connection, which waits out a failover: the Worker resumes as soon as the cluster answers.
   */
  override async waitForJob(blockTimeout: number): ReturnType<RedisQueueBackend['waitForJob']> {
    if (this.disturbed) {
      await this.wake();
      this.disturbed = false;
    }
    try {
      return await super.waitForJob(blockTimeout);
    } catch (error) {
      this.disturbed = true;
      throw error;
    }
  }

  /** The queue's marker, set as adding a job sets it: a blocked wait returns at once. */
  async wake(): Promise<void> {
    await this.cluster.zadd(this.toKey('marker'), 0, '0');
  }
}

/**
 * Emitted by a Worker's backend (`worker.getBackend()`) on a cluster when its blocking
 * connection is back after it was lost (its master failed over): see apps/worker's
 * orphaned-jobs.ts.
 */
export const BLOCKING_RECONNECTED = 'baton:blocking-reconnected';

/**
 * The BullMQ backend factory of a worker's Workers (pass it as `new Worker`'s last argument).
 * On one Redis it is BullMQ's own. On a cluster each Worker's blocking connection holds one
 * connection, to the master of its queue's slot, instead of a Cluster client's several (K
 * shards × most nodes), and a Worker whose blocking connection was cut (a failover) looks at
 * its queue as soon as it is back, instead of at its next idle poll.
 */
export const workerBackend: BackendFactory<RedisQueueBackend> = (name, opts, factoryOpts) => {
  if (!(opts.connection instanceof Cluster) || factoryOpts?.withBlockingConnection !== true)
    return createRedisBackend(name, opts, factoryOpts);
  const shared = opts.connection as Cluster;
  const { prefix = 'bull' } = opts as KeyPrefixOptions;
  const keys = new QueueKeys(prefix);
  const keyMap = keys.getKeys(name);
  const connection = new RedisConnection(shared, {
    shared: true,
    blocking: false,
    skipVersionCheck: opts.skipVersionCheck,
    skipWaitingForReady: opts.skipWaitingForReady,
  });
  const blockingClient = slotOwnerClient(
    shared,
    keySlot(keys.toKey(name, 'marker')),
    // BullMQ's name for a Worker's blocking connection (its getWorkers() lists them by it).
    `${prefix}:${Buffer.from(name).toString('base64')}`,
  );
  const blocking = new RedisConnection(blockingClient, {
    shared: false,
    blocking: true,
    skipVersionCheck: opts.skipVersionCheck,
  });
  const backend = new SlotOwnerBackend(
    shared,
    connection,
    name,
    keyMap,
    (type) => keys.toKey(name, type),
    opts,
    blocking,
  );
  // Reconnected (a failover, a moved slot): the BZPOPMIN sent again may wait for a marker a lost
  // reply took; setting it makes the Worker look at its queue now.
  let connected = false;
  blockingClient.on('ready', () => {
    if (connected) {
      backend.wake().catch((error: unknown) => {
        backend.emit('error', error);
      });
      backend.emit(BLOCKING_RECONNECTED);
    }
    connected = true;
  });
  return backend;
};
