/**
 * Test fixture: a real Redis Cluster on loopback (default 3 masters + 3 replicas), made of
 * `redis-server --cluster-enabled yes` processes joined by `redis-cli --cluster create`. No
 * Docker. Each node has its own port, bus port (`--cluster-port`, so no port+10000 clash) and
 * directory under one private temp dir; nothing is persisted unless asked, only nodes.conf, which
 * is what lets a killed node come back as the same node (and, after a failover, as a replica of
 * the master that replaced it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { findRedisServer, freePort } from './redis.ts';
import { runTempPrefix } from './run-processes.ts';
import {
  errorMessage,
  nodeCommand,
  parseClusterNodes,
  parseInfo,
  runCli,
  sleep,
  type ClusterRole,
  type ParsedNode,
} from './redis-cluster-node.ts';

export type { ClusterRole };

export interface ClusterNodeInfo {
  readonly port: number;
  /** The node's role now (after a failover a replica is a master and vice versa). */
  readonly role: ClusterRole;
  /** The process id, or undefined while the node is killed. */
  readonly pid: number | undefined;
  readonly alive: boolean;
  /** For a replica: the port of the master it replicates. */
  readonly masterPort?: number;
}

export interface NodeCommandStats {
  readonly port: number;
  readonly role: ClusterRole;
  /** Sum of `calls` over every command in INFO commandstats. */
  readonly total: number;
  /** calls by lower-case command name (`hset`, `evalsha`, `cluster|info`, …). */
  readonly byCommand: Readonly<Record<string, number>>;
}

export interface NodeCpu {
  readonly port: number;
  readonly role: ClusterRole;
  /** used_cpu_sys + used_cpu_user, in seconds, since the node started. */
  readonly seconds: number;
}

export interface RedisClusterOptions {
  readonly masters?: number;
  readonly replicasPerMaster?: number;
  /** --cluster-node-timeout: how long a master must be unreachable before failover (ms). */
  readonly nodeTimeoutMs?: number;
  /** 'off' (default): no persistence at all; otherwise AOF with that fsync policy. */
  readonly aof?: 'always' | 'everysec' | 'off';
  /** How long to wait for the cluster to be healthy after create or restart (ms). */
  readonly readyTimeoutMs?: number;
}

export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…`: every node, so any of them seeds a client. */
  readonly url: string;
  /** Every node's port, in start order. */
  readonly ports: readonly number[];
  /** The node table now (roles read from CLUSTER NODES of a live node). */
  nodes(): Promise<ClusterNodeInfo[]>;
  masterForSlot(slot: number): Promise<number>;
  masterForKey(key: string): Promise<number>;
  keySlot(key: string): Promise<number>;
  /** SIGKILLs the node on `port` and waits for the process to exit. */
  kill(port: number): Promise<void>;
  /** Starts a killed node again (same port, dir, nodes.conf) and waits until the cluster is healthy. */
  restart(port: number): Promise<void>;
  /** Resolves when every live node says cluster_state:ok, all slots are served and replicas are linked. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Sends one command to one node (not through the cluster client: no redirections). */
  nodeCommand(port: number, ...args: (string | number)[]): Promise<unknown>;
  perNodeCommandStats(): Promise<NodeCommandStats[]>;
  /**
   * Cluster-bus messages so far (CLUSTER INFO cluster_stats_messages_sent / _received), summed
   * over live nodes. Every message is counted once in each: `sent` counts each message once.
   */
  busMessages(): Promise<{ sent: number; received: number }>;
  perNodeCpu(): Promise<NodeCpu[]>;
  /** Kills every node and removes the temp dir; idempotent. */
  stop(): Promise<void>;
}

interface NodeProcess {
  readonly port: number;
  readonly busPort: number;
  readonly dir: string;
  child: ChildProcess | undefined;
  exited: Promise<void>;
  output: string;
}

const SLOTS = 16384;

export async function startRedisCluster(opts: RedisClusterOptions = {}): Promise<RedisCluster> {
  const bin = await findRedisServer();
  if (bin === undefined) throw new Error('redis-server is needed on PATH for a Redis Cluster');
  const masters = opts.masters ?? 3;
  const replicas = opts.replicasPerMaster ?? 1;
  const nodeTimeout = opts.nodeTimeoutMs ?? 3000;
  const readyTimeout = opts.readyTimeoutMs ?? 30_000;
  const root = await mkdtemp(runTempPrefix('baton-redis-cluster'));
  const procs: NodeProcess[] = [];
  const byPort = new Map<number, NodeProcess>();
  const killAll = (): void => {
    for (const p of procs) p.child?.kill('SIGKILL');
  };
  process.on('exit', killAll);

  const persistence =
    (opts.aof ?? 'off') === 'off'
      ? ['--appendonly', 'no']
      : ['--appendonly', 'yes', '--appendfsync', opts.aof ?? 'everysec'];

  const spawnNode = (p: NodeProcess): void => {
    const child = spawn(
      bin,
      [
        '--port',
        String(p.port),
        '--cluster-port',
        String(p.busPort),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        String(nodeTimeout),
        // A replica whose link to a dead master is old still takes over: the test kills masters.
        '--cluster-replica-validity-factor',
        '0',
        '--save',
        '',
        ...persistence,
        '--dir',
        p.dir,
        '--daemonize',
        'no',
        '--logfile',
        '',
      ],
      // Its own process group: a Ctrl-C meant for `npm start` must not kill the nodes before the
      // API and worker have stopped (stop() and the exit hook end them).
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    p.child = child;
    p.output = '';
    const collect = (chunk: Buffer): void => {
      p.output = (p.output + chunk.toString('utf8')).slice(-8192);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    p.exited = new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', () => resolve());
    });
  };

  const isRunning = (p: NodeProcess): boolean =>
    p.child !== undefined && p.child.exitCode === null && p.child.signalCode === null;

  const waitAnswering = async (p: NodeProcess): Promise<void> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (!isRunning(p))
        throw new Error(`redis-server on ${p.port} exited before answering:\n${p.output}`);
      try {
        if ((await nodeCommand(p.port, 'PING')) === 'PONG') return;
      } catch {
        // not yet
      }
      if (Date.now() > deadline)
        throw new Error(`redis-server on ${p.port} did not answer PING:\n${p.output}`);
      await sleep(50);
    }
  };

  const live = (): NodeProcess[] => procs.filter(isRunning);

  const clusterNodes = async (): Promise<ParsedNode[]> => {
    let lastError: unknown = new Error('no live node');
    for (const p of live()) {
      try {
        return parseClusterNodes(String(await nodeCommand(p.port, 'CLUSTER', 'NODES')));
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError;
  };

  const nodes = async (): Promise<ClusterNodeInfo[]> => {
    const table = await clusterNodes();
    const portOfId = new Map(table.map((n) => [n.id, n.port]));
    return procs.map((p) => {
      const row = table.find((n) => n.port === p.port);
      const masterPort = row?.masterId === undefined ? undefined : portOfId.get(row.masterId);
      return {
        port: p.port,
        role: row?.role ?? 'master',
        pid: isRunning(p) ? p.child?.pid : undefined,
        alive: isRunning(p),
        ...(masterPort === undefined ? {} : { masterPort }),
      };
    });
  };

  const healthProblem = async (): Promise<string | undefined> => {
    const running = live();
    for (const p of running) {
      let info: Record<string, string>;
      try {
        info = parseInfo(String(await nodeCommand(p.port, 'CLUSTER', 'INFO')));
      } catch (err) {
        return `${p.port}: ${errorMessage(err)}`;
      }
      if (info['cluster_state'] !== 'ok')
        return `${p.port}: cluster_state ${info['cluster_state']}`;
      if (info['cluster_slots_ok'] !== String(SLOTS))
        return `${p.port}: ${info['cluster_slots_ok']} slots ok`;
      if (Number(info['cluster_known_nodes']) < procs.length)
        return `${p.port}: knows ${info['cluster_known_nodes']} of ${procs.length} nodes`;
    }
    const table = await clusterNodes();
    for (const p of running) {
      const row = table.find((n) => n.port === p.port);
      if (row === undefined) return `${p.port}: not in CLUSTER NODES`;
      if (row.flags.includes('fail')) return `${p.port}: flagged ${row.flags.join(',')}`;
      if (row.role === 'replica') {
        const repl = parseInfo(String(await nodeCommand(p.port, 'INFO', 'replication')));
        if (repl['master_link_status'] !== 'up') return `${p.port}: replica link not up`;
      }
    }
    // Every slot served by a live master (a dead master may still be listed without fail flag).
    const livePorts = new Set(running.map((p) => p.port));
    let served = 0;
    for (const n of table)
      if (n.role === 'master' && livePorts.has(n.port) && !n.flags.includes('fail'))
        served += n.slotCount;
    if (served !== SLOTS) return `live masters serve ${served} of ${SLOTS} slots`;
    if (replicas > 0) {
      const liveMasters = table.filter((n) => n.role === 'master' && livePorts.has(n.port));
      for (const m of liveMasters) {
        if (m.slotCount === 0) continue;
        const attached = table.filter(
          (n) => n.role === 'replica' && n.masterId === m.id && livePorts.has(n.port),
        ).length;
        // A master whose replica was killed and not restarted has none: that is the test's choice.
        if (attached === 0 && running.length === procs.length)
          return `master ${m.port} has no replica`;
      }
    }
    return undefined;
  };

  const waitHealthy = async (timeoutMs = readyTimeout): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    let problem: string | undefined = 'not checked';
    while (Date.now() < deadline) {
      try {
        problem = await healthProblem();
      } catch (err) {
        problem = errorMessage(err);
      }
      if (problem === undefined) return;
      await sleep(100);
    }
    throw new Error(`Redis Cluster not healthy after ${timeoutMs} ms: ${problem}`);
  };

  const stop = async (): Promise<void> => {
    await Promise.all(
      procs.map(async (p) => {
        if (isRunning(p)) p.child?.kill('SIGKILL');
        await p.exited;
      }),
    );
    process.off('exit', killAll);
    await rm(root, { recursive: true, force: true });
  };

  try {
    const count = masters * (1 + replicas);
    const used = new Set<number>();
    const pick = async (): Promise<number> => {
      for (;;) {
        const port = await freePort();
        if (!used.has(port)) {
          used.add(port);
          return port;
        }
      }
    };
    for (let i = 0; i < count; i += 1) {
      const port = await pick();
      const busPort = await pick();
      const dir = join(root, String(port));
      await mkdir(dir);
      const p: NodeProcess = {
        port,
        busPort,
        dir,
        child: undefined,
        exited: Promise.resolve(),
        output: '',
      };
      procs.push(p);
      byPort.set(port, p);
      spawnNode(p);
    }
    await Promise.all(procs.map(waitAnswering));
    await runCli(
      bin.replace(/redis-server$/, 'redis-cli'),
      [
        '--cluster',
        'create',
        ...procs.map((p) => `127.0.0.1:${p.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      60_000,
    );
    await waitHealthy();
  } catch (err) {
    await stop();
    throw err;
  }

  const masterForSlot = async (slot: number): Promise<number> => {
    for (const p of live()) {
      try {
        const slots = (await nodeCommand(p.port, 'CLUSTER', 'SLOTS')) as [
          number,
          number,
          [string, number, ...unknown[]],
          ...unknown[],
        ][];
        for (const [from, to, master] of slots) if (slot >= from && slot <= to) return master[1];
      } catch {
        // ask the next node
      }
    }
    throw new Error(`no live node knows who serves slot ${slot}`);
  };

  const keySlot = async (key: string): Promise<number> => {
    const p = live()[0];
    if (p === undefined) throw new Error('no live node');
    return Number(await nodeCommand(p.port, 'CLUSTER', 'KEYSLOT', key));
  };

  const roleOf = async (): Promise<Map<number, ClusterRole>> =>
    new Map((await nodes()).map((n) => [n.port, n.role]));

  return {
    url: `redis+cluster://${procs.map((p) => `127.0.0.1:${p.port}`).join(',')}`,
    ports: procs.map((p) => p.port),
    nodes,
    masterForSlot,
    keySlot,
    masterForKey: async (key) => masterForSlot(await keySlot(key)),
    kill: async (port) => {
      const p = byPort.get(port);
      if (p === undefined) throw new Error(`no cluster node on ${port}`);
      if (!isRunning(p)) return;
      p.child?.kill('SIGKILL');
      await p.exited;
    },
    restart: async (port) => {
      const p = byPort.get(port);
      if (p === undefined) throw new Error(`no cluster node on ${port}`);
      if (!isRunning(p)) {
        spawnNode(p);
        await waitAnswering(p);
      }
      await waitHealthy();
    },
    waitHealthy,
    nodeCommand,
    perNodeCommandStats: async () => {
      const roles = await roleOf();
      const out: NodeCommandStats[] = [];
      for (const p of live()) {
        const text = String(await nodeCommand(p.port, 'INFO', 'commandstats'));
        const byCommand: Record<string, number> = {};
        let total = 0;
        for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
          const calls = Number(m[2]);
          byCommand[m[1] ?? ''] = calls;
          total += calls;
        }
        out.push({ port: p.port, role: roles.get(p.port) ?? 'master', total, byCommand });
      }
      return out;
    },
    busMessages: async () => {
      let sent = 0;
      let received = 0;
      for (const p of live()) {
        const info = parseInfo(String(await nodeCommand(p.port, 'CLUSTER', 'INFO')));
        sent += Number(info['cluster_stats_messages_sent'] ?? 0);
        received += Number(info['cluster_stats_messages_received'] ?? 0);
      }
      return { sent, received };
    },
    perNodeCpu: async () => {
      const roles = await roleOf();
      const out: NodeCpu[] = [];
      for (const p of live()) {
        const info = parseInfo(String(await nodeCommand(p.port, 'INFO', 'cpu')));
        out.push({
          port: p.port,
          role: roles.get(p.port) ?? 'master',
          seconds: Number(info['used_cpu_sys'] ?? 0) + Number(info['used_cpu_user'] ?? 0),
        });
      }
      return out;
    },
    stop,
  };
}
