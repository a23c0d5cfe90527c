import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './scripts.ts';
import { DurabilityError } from '../errors/durability-error.ts';
import { RedisVersionError } from '../errors/redis-version-error.ts';

export type DurabilityMode = 'relaxed' | 'strict';

/**
 * How an acknowledged write reaches disk:
 * - 'fsync-always': Redis runs with appendonly yes and appendfsync always, so it fsyncs the AOF
 *   before it replies; every reply Baton got is already on disk.
 * - 'waitaof': Redis ≥ 7.2; Baton asks WAITAOF 1 0 before it answers 2xx.
 * - 'none': relaxed mode; whatever Redis is configured for (with appendfsync everysec the last
 *   second of acknowledged writes can be lost in a host crash).
 * On a Redis Cluster every master must qualify, and where masters have replicas a write is also
 * on a replica before 2xx (see Durability.acknowledge): a failover promotes a replica, and
 * replication is asynchronous.
 */
export type DurabilityStrategy = 'fsync-always' | 'waitaof' | 'none';

function field(info: string, name: string): string | undefined {
  const line = info.split(/\r?\n/).find((l) => l.startsWith(`${name}:`));
  return line?.slice(name.length + 1).trim();
}

function atLeast(version: string, major: number, minor: number): boolean {
  const [a = 0, b = 0] = version.split('.').map(Number);
  return a > major || (a === major && b >= minor);
}

/** How long a 2xx may wait for the fsync or the replica before it becomes a 503. */
const WAIT_MS = '2000';
/** On a cluster, below the API's 500 ms command timeout there (connection.ts). */
const CLUSTER_WAIT_MS = '400';

interface NodeDurability {
  readonly aof: boolean;
  readonly fsync: string | undefined;
  readonly waitaof: boolean;
  readonly replicas: number;
}

async function inspect(node: Redis | Cluster): Promise<NodeDurability> {
  const server = await node.info('server');
  const persistence = await node.info('persistence');
  const replication = await node.info('replication');
  let fsync: string | undefined;
  try {
    const reply = await node.config('GET', 'appendfsync');
    fsync = reply[1];
  } catch {
    fsync = undefined; // CONFIG is often disabled on managed Redis
  }
  const aof = field(persistence, 'aof_enabled') === '1';
  return {
    aof,
    fsync,
    waitaof: aof && atLeast(field(server, 'redis_version') ?? '0', 7, 2),
    replicas: Number(field(replication, 'connected_slaves') ?? '0'),
  };
}

function strategyOf(node: NodeDurability): DurabilityStrategy | null {
  if (node.aof && node.fsync === 'always') return 'fsync-always';
  return node.waitaof ? 'waitaof' : null;
}

/**
 * Decides how strict mode is honoured on this Redis, and checks it once at start-up: a strict
 * process refuses to start against a Redis that cannot keep the promise (one line naming the
 * setting to change), rather than acknowledging writes it may lose.
 */
export class Durability {
  private readonly redis: RedisClient;
  readonly mode: DurabilityMode;
  private strategyValue: DurabilityStrategy = 'none';
  /** On a cluster whose masters have replicas: each write waits for one (WAIT / WAITAOF). */
  private replicasValue = 0;

  constructor(redis: RedisClient, mode: DurabilityMode) {
    this.redis = redis;
    this.mode = mode;
  }

  get strategy(): DurabilityStrategy {
    return this.strategyValue;
  }

  /** Replicas a write must reach before 2xx (a cluster with replicas: 1; otherwise 0). */
  get replicas(): number {
    return this.replicasValue;
  }

  /**
   * Also refuses a Redis older than 7 (whatever the mode): the commit scripts SPUBLISH every event
   * (sharded pub/sub, Redis 7), and on an older server every commit would fail.
   */
  async check(): Promise<DurabilityStrategy> {
    // A Cluster's node list is its startup nodes until it has read the slot map, and those
    // connections are closed when it has: ask the masters it knows once it is ready.
    if (this.redis instanceof Cluster) await clusterReady(this.redis);
    const all = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
    for (const node of all) await this.checkVersion(node);
    if (this.mode === 'relaxed') return (this.strategyValue = 'none');
    if (!(this.redis instanceof Cluster)) {
      const node = await inspect(this.redis);
      const strategy = strategyOf(node);
      if (strategy === null) throw refusal(node);
      return (this.strategyValue = strategy);
    }
    // Every master takes writes (each run lives on the master of its slot): each must qualify.
    const masters = this.redis.nodes('master');
    const nodes = await Promise.all(masters.map(inspect));
    let strategy: DurabilityStrategy = 'fsync-always';
    for (const [i, node] of nodes.entries()) {
      const own = strategyOf(node);
      if (own === null) {
        const where = `${masters[i]?.options.host ?? '?'}:${masters[i]?.options.port ?? '?'}`;
        throw refusal(node, ` on cluster master ${where}`);
      }
      if (own === 'waitaof') strategy = 'waitaof';
    }
    this.replicasValue = nodes.some((n) => n.replicas > 0) ? 1 : 0;
    return (this.strategyValue = strategy);
  }

  /**
   * Call after the writes of a request and before answering 2xx. WAITAOF and WAIT wait for the
   * writes this client's connection sent to that node; on a cluster a request writes on the
   * masters of several slots (the run's, its thread's, its tenant's), so each master is asked on
   * the connection that took its writes (a master this client wrote nothing to answers at once).
   */
  async acknowledge(): Promise<void> {
    if (this.strategyValue === 'none') return;
    const nodes = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
    await Promise.all(nodes.map((node) => this.waitOn(node)));
  }

  private async checkVersion(node: Redis | Cluster): Promise<void> {
    let server: string;
    try {
      server = await node.info('server');
    } catch (err) {
      // A managed Redis may refuse INFO: relaxed mode has nothing else to check.
      if (this.mode === 'relaxed' && err instanceof Error && err.name === 'ReplyError') return;
      throw err;
    }
    const version = field(server, 'redis_version') ?? '0';
    if (!atLeast(version, 7, 0))
      throw new RedisVersionError(
        `Baton needs Redis 7 or later (sharded pub/sub: SPUBLISH/SSUBSCRIBE); this server is Redis ${version}`,
      );
  }

  private async waitOn(node: Redis | Cluster): Promise<void> {
    const replicas = this.replicasValue;
    const timeout = this.redis instanceof Cluster ? CLUSTER_WAIT_MS : WAIT_MS;
    if (this.strategyValue === 'waitaof') {
      const reply = (await node.call('WAITAOF', '1', String(replicas), timeout)) as [
        number,
        number,
      ];
      if (reply[0] < 1)
        throw new DurabilityError('Redis did not confirm that the write reached its AOF in time');
      if (reply[1] < replicas)
        throw new DurabilityError('no replica confirmed the write in time (cluster failover?)');
      return;
    }
    if (replicas === 0) return; // fsync-always: the reply already meant "on disk"
    const acked = (await node.call('WAIT', String(replicas), timeout)) as number;
    if (acked < replicas)
      throw new DurabilityError('no replica confirmed the write in time (cluster failover?)');
  }
}

/** Resolves once the Cluster has its slot map (the API's client queues no command before). */
async function clusterReady(cluster: Cluster, timeoutMs = 15_000): Promise<void> {
  if (cluster.status === 'ready') return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      new Promise<void>((resolve) => cluster.once('ready', () => resolve())),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the Redis Cluster was not ready within ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function refusal(node: NodeDurability, where = ''): DurabilityError {
  return new DurabilityError(
    `BATON_DURABILITY=strict needs Redis to persist every write before it answers: run it with ` +
      `"appendonly yes" and "appendfsync always" (found appendonly ${node.aof ? 'yes' : 'no'}, ` +
      `appendfsync ${node.fsync ?? 'unknown'}${where}), or use Redis 7.2+ with appendonly yes ` +
      `(WAITAOF); or set BATON_DURABILITY=relaxed`,
  );
}
