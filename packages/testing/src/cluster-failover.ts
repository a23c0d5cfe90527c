import type { RedisCluster } from './redis-cluster.ts';
import type { ProbeEvent } from './worker-process.ts';

/**
 * What the failover tests kill and wait for, shared so that every failover test picks its victim
 * and reads the cluster's recovery the same way.
 */

/**
 * The BullMQ keys of this prefix on each live master, by port: SCAN on every master, since a
 * cluster client's SCAN sees one node only.
 */
export async function queueKeysByMaster(
  cluster: RedisCluster,
  prefix: string,
): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  for (const node of await cluster.nodes()) {
    if (node.role !== 'master' || !node.alive) continue;
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = (await cluster.nodeCommand(
        node.port,
        'SCAN',
        cursor,
        'MATCH',
        `*${prefix}*bull*`,
        'COUNT',
        1000,
      )) as [string, string[]];
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
    out.set(node.port, found);
  }
  return out;
}

/**
 * The live master holding the most BullMQ keys of this prefix (its queue shard(s)), and the share
 * of those keys it holds: killing it is the failover that hurts the queues most.
 */
export async function busiestQueueMaster(
  cluster: RedisCluster,
  prefix: string,
): Promise<{ port: number; share: number }> {
  const counts = new Map(
    [...(await queueKeysByMaster(cluster, prefix))].map(([port, keys]) => [port, keys.length]),
  );
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const [port, n] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0] ?? [0, 0];
  return { port, share: total === 0 ? 0 : n / total };
}

/**
 * When every live node says cluster_state:ok again after the kill: the cluster first goes to
 * fail (the dead master's slots unserved), then back to ok once its replica is promoted.
 * Resolves with that time (ms since the epoch), or null if no node ever said fail before `stop`.
 */
export async function clusterOkAgain(
  cluster: RedisCluster,
  killed: number,
  stop: { done: boolean },
): Promise<number | null> {
  const ports = (await cluster.nodes()).map((n) => n.port).filter((p) => p !== killed);
  let sawFail = false;
  while (!stop.done) {
    const states = await Promise.all(
      ports.map(async (port) => {
        const info = String(await cluster.nodeCommand(port, 'CLUSTER', 'INFO').catch(() => ''));
        return /^cluster_state:(\w+)/m.exec(info)?.[1] ?? 'unknown';
      }),
    );
    if (states.some((s) => s !== 'ok')) sawFail = true;
    else if (sawFail) return Date.now();
    await new Promise((r) => setTimeout(r, 25));
  }
  return null;
}

/**
 * How often each tool call ran (`<runId>/<toolCallId>` → count), from the worker's
 * `tool-executed` probes: a failover may run a call again (at least once), never lose it.
 */
export function toolExecutions(probes: readonly ProbeEvent[]): Map<string, number> {
  const executions = new Map<string, number>();
  for (const p of probes)
    if (p.point === 'tool-executed') {
      const call = `${String(p['runId'])}/${String(p['toolCallId'])}`;
      executions.set(call, (executions.get(call) ?? 0) + 1);
    }
  return executions;
}
