import { Cluster, type Redis } from 'ioredis';
import type { Logger } from 'pino';
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
 * On a Redis Cluster every master must qualify, and a write to a master that has a replica is also
 * on that replica before 2xx (see Durability.acknowledge): a failover promotes a replica, and
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
/**
 * While a cluster master has no replica, how often a write asks it again (without waiting for the
 * answer): a replica that joins (the old master back after a failover) is waited for within it.
 */
const UNREPLICATED_RECHECK_MS = 1_000;

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
  private readonly logger: Logger | undefined;
  private strategyValue: DurabilityStrategy = 'none';
  /** On a cluster whose masters have replicas: each write waits for one (WAIT / WAITAOF). */
  private replicasValue = 0;
  /**
   * Cluster masters found to have no replica a failover could promote (the replica promoted in a
   * failover, until the old master is back as its replica; a master whose replica the cluster
   * marked failed), with when that was last checked. Waiting for a replica there refused every
   * strict write to them until the old master returned (issue 32).
   */
  private readonly alone = new Map<string, number>();
  private readonly checking = new Set<string>();
  private unreplicatedValue = 0;

  constructor(redis: RedisClient, mode: DurabilityMode, logger?: Logger) {
    this.redis = redis;
    this.mode = mode;
    this.logger = logger;
  }

  get strategy(): DurabilityStrategy {
    return this.strategyValue;
  }

  /** Replicas a write must reach before 2xx (a cluster with replicas: 1; otherwise 0). */
  get replicas(): number {
    return this.replicasValue;
  }

  /**
   * Masters acknowledged on their own fsync alone, because the cluster knew no replica of
   * theirs (after a failover, until the old master is back as a replica): a counter for metrics.
   */
  get unreplicatedAcknowledgements(): number {
    return this.unreplicatedValue;
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

  /**
   * Strict mode on a cluster follows its topology: a write to a master waits for a replica as
   * long as the master has one the cluster could promote (replication is asynchronous, and a
   * failover would serve that copy). A master with none (the replica promoted in a failover,
   * until the old master is back as its replica; a master whose replica the cluster marked
   * failed) acknowledges once the write is on its own disk: no failover can then serve a copy
   * without it. That is found when a replica does not confirm in time, rechecked at most every
   * UNREPLICATED_RECHECK_MS while it lasts, counted and logged.
   */
  private async waitOn(node: Redis | Cluster): Promise<void> {
    const cluster = this.redis instanceof Cluster;
    const where = nodeKey(node);
    let replicas = this.replicasValue;
    const alone = cluster ? this.alone.get(where) : undefined;
    if (alone !== undefined && replicas > 0) {
      replicas = 0;
      if (Date.now() - alone >= UNREPLICATED_RECHECK_MS) this.recheck(node, where);
    }
    const timeout = cluster ? CLUSTER_WAIT_MS : WAIT_MS;
    let confirmed: number;
    if (this.strategyValue === 'waitaof') {
      const reply = (await node.call('WAITAOF', '1', String(replicas), timeout)) as [
        number,
        number,
      ];
      if (reply[0] < 1)
        throw new DurabilityError('Redis did not confirm that the write reached its AOF in time');
      confirmed = reply[1];
    } else if (replicas > 0) {
      // fsync-always: the write's reply already meant "on the master's disk".
      confirmed = (await node.call('WAIT', String(replicas), timeout)) as number;
    } else confirmed = 0;
    if (confirmed >= replicas) {
      if (replicas === 0 && alone !== undefined) this.unreplicatedValue += 1;
      return;
    }
    if (!cluster || !(await hasNoPromotableReplica(node)))
      throw new DurabilityError('no replica confirmed the write in time (cluster failover?)');
    this.alone.set(where, Date.now());
    this.unreplicatedValue += 1;
    this.logger?.warn(
      { master: where },
      'strict durability: this Redis Cluster master has no replica a failover could promote (a failover promoted it?); its writes are acknowledged once on its own disk until a replica joins',
    );
  }

  /** Asks a lone master again whether it has a replica (not waited for by the request). */
  private recheck(node: Redis | Cluster, where: string): void {
    if (this.checking.has(where)) return;
    this.checking.add(where);
    this.alone.set(where, Date.now());
    hasNoPromotableReplica(node)
      .then((stillAlone) => {
        if (stillAlone || !this.alone.delete(where)) return;
        this.logger?.info(
          { master: where },
          'strict durability: this Redis Cluster master has a replica again; its writes wait for it',
        );
      })
      .catch(() => undefined)
      .finally(() => this.checking.delete(where));
  }
}

/**
 * Whether every replica the cluster lists for this master is marked failed (or there is none):
 * then no failover can promote a copy of its data. A replica only suspected ("fail?") still
 * counts, and so does one still syncing.
 */
async function hasNoPromotableReplica(node: Redis | Cluster): Promise<boolean> {
  try {
    const id = String(await node.call('CLUSTER', 'MYID'));
    const reply = (await node.call('CLUSTER', 'REPLICAS', id)) as string[] | string;
    const lines = (Array.isArray(reply) ? reply : reply.split('\n')).filter((l) => l.trim());
    return lines.every((line) => (line.split(' ')[2] ?? '').split(',').includes('fail'));
  } catch {
    return false;
  }
}

function nodeKey(node: Redis | Cluster): string {
  const { host, port } = (node as Redis).options;
  return `${host ?? ''}:${String(port ?? '')}`;
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
