/**
 * Issue 32: the API's cluster connection once handed commands other commands' replies for
 * minutes (an acquire read `1`, a WAIT's reply; a checkpoint read an HGETALL of the agents). The
 * cause: the fail-fast gate (fail-fast-cluster.ts) refused a pipeline from its middle on when its
 * window ended or began between two of the pipeline's commands; ioredis had already queued the
 * others for replies on their node's connection but never wrote them (it writes a pipeline once
 * its last command is handed over), so every later reply there went to the command before it.
 *
 * Every command here reads back a value unique to it, through the API's own client (fail-fast,
 * 500 ms command timeout, strict durability's WAIT on every master), while masters are paused
 * (replies arrive after their commands timed out), killed and failed over: no reply may ever
 * belong to another command.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Cluster } from 'ioredis';
import { createRedisClient } from '@baton/runtime';
import { Durability } from '@baton/runtime/internal';
import { startRedisCluster, type RedisCluster } from '@baton/testing/redis-cluster';

let cluster: RedisCluster;
const clients: Cluster[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster({
    masters: 3,
    replicasPerMaster: 1,
    nodeTimeoutMs: 2000,
    aof: 'always',
  });
}, 90_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await cluster?.stop();
});

/** The API's cluster client, ready (the API waits the same way before it listens). */
async function apiClient(): Promise<Cluster> {
  const client = createRedisClient(
    { REDIS_URL: cluster.url },
    { role: 'api', connectionName: 'pairing' },
  ) as Cluster;
  client.on('error', () => undefined);
  clients.push(client);
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

/** A key of the form `{tag}:name` whose slot the master on `port` serves. */
async function keyOn(port: number, name: string): Promise<string> {
  for (let i = 0; ; i += 1) {
    const key = `{pair-${String(i)}}:${name}`;
    if ((await cluster.masterForKey(key)) === port) return key;
  }
}

async function clusterOk(ports: readonly number[]): Promise<boolean> {
  const states = await Promise.all(
    ports.map(async (port) =>
      String(await cluster.nodeCommand(port, 'CLUSTER', 'INFO').catch(() => '')),
    ),
  );
  return states.every((s) => /^cluster_state:ok/m.test(s));
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the API's cluster connection pairs every reply with its own command", () => {
  it('a pipeline is refused whole or sent whole when the fail-fast window ends between its commands', async () => {
    const client = await apiClient();
    const master = (await cluster.nodes()).find((n) => n.role === 'master' && n.alive)!.port;
    const a = await keyOn(master, 'a');
    const b = a.replace(':a', ':b');
    // The gate's window ends right after it looked at the pipeline's first command.
    const now = Date.now();
    (client as unknown as { downUntil: number }).downUntil = now + 60_000;
    let asked = 0;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => {
      asked += 1;
      return asked === 1 ? now : now + 120_000;
    });
    let pipeline: Promise<unknown>;
    try {
      pipeline = client.pipeline().set(a, 'A').get(a).set(b, 'B').get(b).exec();
    } finally {
      clock.mockRestore();
    }
    const outcome = (await pipeline) as [Error | null, unknown][];
    (client as unknown as { downUntil: number }).downUntil = 0;
    const errors = outcome.filter(([e]) => e !== null).length;
    // Whole: refused (every command "not sent") or sent (every reply its own).
    if (errors > 0) expect(errors).toBe(4);
    else expect(outcome.map(([, v]) => v)).toEqual(['OK', 'A', 'OK', 'B']);
    // The connection to that master still pairs replies with their commands.
    const wrong: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const key = `${a}:${String(i)}`;
      const set = await client.set(key, `v${String(i)}`).catch((e: unknown) => String(e));
      const got = await client.get(key).catch((e: unknown) => String(e));
      if (set !== 'OK' || got !== `v${String(i)}`) wrong.push(`SET → ${set}, GET → ${got}`);
    }
    expect(wrong, wrong.join('\n')).toEqual([]);
  }, 60_000);

  it('thousands of commands through command timeouts, paused masters, a failover and strict WAITs: no reply is another command’s', async () => {
    const client = await apiClient();
    const durability = new Durability(client, 'strict');
    await durability.check();
    const allPorts = cluster.ports;
    const stats = { ok: 0, failed: 0, timedOut: 0, notSent: 0, acked: 0, ackFailed: 0 };
    const wrong: string[] = [];
    const failedWith = (error: unknown): void => {
      stats.failed += 1;
      const message = String(error);
      if (message.includes('Command timed out')) stats.timedOut += 1;
      if (message.includes('command not sent')) stats.notSent += 1;
    };
    const expectReply = (what: string, got: unknown, want: unknown): void => {
      if (JSON.stringify(got) === JSON.stringify(want)) stats.ok += 1;
      else wrong.push(`${what}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
    };
    const stop = { done: false };

    /** One client loop: a command of each kind per turn, every value unique to its command. */
    async function load(worker: number): Promise<void> {
      for (let turn = 0; !stop.done; turn += 1) {
        const id = `${String(worker)}-${String(turn)}`;
        const key = `{pair-${id}}`;
        const kind = turn % 4;
        try {
          if (kind === 0) {
            // A write, then its own read: the value or nothing (a timed-out SET may not apply).
            const set = await client.set(`${key}:s`, id);
            expectReply(`SET ${id}`, set, 'OK');
            const got = await client.get(`${key}:s`);
            expectReply(`GET ${id}`, got, id);
          } else if (kind === 1) {
            const replies = (await client
              .pipeline()
              .set(`${key}:p`, id)
              .hset(`${key}:h`, 'f', id)
              .get(`${key}:p`)
              .hgetall(`${key}:h`)
              .exec()) as [Error | null, unknown][];
            const want: unknown[] = ['OK', 1, id, { f: id }];
            replies.forEach(([error, value], i) => {
              if (error) failedWith(error);
              else expectReply(`pipeline ${id}[${String(i)}]`, value, want[i]);
            });
          } else if (kind === 2) {
            // Keyless: any node's connection.
            expectReply(`ECHO ${id}`, await client.echo(id), id);
          } else {
            const replies = (await client.multi().set(`${key}:m`, id).get(`${key}:m`).exec()) as [
              Error | null,
              unknown,
            ][];
            replies.forEach(([error, value], i) => {
              if (error) failedWith(error);
              else expectReply(`MULTI ${id}[${String(i)}]`, value, ['OK', id][i]);
            });
          }
          // Strict mode's WAIT on every master, between the commands above.
          await durability.acknowledge().then(
            () => (stats.acked += 1),
            () => (stats.ackFailed += 1),
          );
        } catch (error) {
          failedWith(error);
        }
      }
    }

    const loops = Array.from({ length: 48 }, (_, i) => load(i));
    try {
      const masters = (await cluster.nodes()).filter((n) => n.role === 'master' && n.alive);
      const [first, second, third] = masters.map((n) => n.port);
      await new Promise((r) => setTimeout(r, 1_000));
      // Paused masters: commands time out at 500 ms, their replies come later on the same
      // connection.
      for (const port of [first!, second!, third!]) {
        await cluster.nodeCommand(port, 'CLIENT', 'PAUSE', '1200', 'ALL');
        await new Promise((r) => setTimeout(r, 1_500));
      }
      // A failover, with a pause on another master while it is under way.
      await cluster.kill(first!);
      await cluster.nodeCommand(second!, 'CLIENT', 'PAUSE', '900', 'ALL');
      const live = allPorts.filter((p) => p !== first);
      await until('the replica promoted (cluster_state:ok)', async () => {
        const nodes = await cluster.nodes();
        return (
          nodes.filter((n) => n.role === 'master' && n.alive).length === 3 &&
          (await clusterOk(live))
        );
      });
      await new Promise((r) => setTimeout(r, 2_000));
      await cluster.nodeCommand(third!, 'CLIENT', 'PAUSE', '900', 'ALL');
      await cluster.restart(first!);
      await new Promise((r) => setTimeout(r, 2_000));
    } finally {
      stop.done = true;
      await Promise.all(loops);
    }
    console.info(`[reply-pairing] ${JSON.stringify({ ...stats, wrong: wrong.length })}`);
    expect(wrong, wrong.slice(0, 20).join('\n')).toEqual([]);
    // The faults were real: commands timed out, the gate refused some, most went through.
    expect(stats.timedOut).toBeGreaterThan(0);
    expect(stats.ok).toBeGreaterThan(1_000);
    expect(stats.acked).toBeGreaterThan(0);
  }, 240_000);
});
