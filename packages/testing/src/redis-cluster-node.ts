/**
 * Talking to one node of the Redis Cluster fixture (redis-cluster.ts): a one-shot command on a
 * connection of its own, `redis-cli`, and the CLUSTER NODES / INFO replies parsed.
 */
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';

/** Sends one command to one node (not through a cluster client: no redirections), on a connection of its own. */
export async function nodeCommand(port: number, ...args: (string | number)[]): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    connectTimeout: 1000,
    commandTimeout: 2000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    enableReadyCheck: false,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    const [name, ...rest] = args;
    return await client.call(String(name), ...rest);
  } finally {
    client.disconnect();
  }
}

export type ClusterRole = 'master' | 'replica';

export interface ParsedNode {
  readonly id: string;
  readonly port: number;
  readonly flags: readonly string[];
  readonly role: ClusterRole;
  readonly masterId: string | undefined;
  readonly slotCount: number;
}

/** CLUSTER NODES: `<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot>…` */
export function parseClusterNodes(text: string): ParsedNode[] {
  const out: ParsedNode[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(' ');
    if (f.length < 8) continue;
    const [id = '', addr = '', flagText = '', master = '-'] = f;
    const flags = flagText.split(',');
    let slotCount = 0;
    for (const range of f.slice(8)) {
      if (range.startsWith('[')) continue; // a slot being migrated
      const [a, b] = range.split('-').map(Number);
      if (a !== undefined) slotCount += (b ?? a) - a + 1;
    }
    out.push({
      id,
      port: Number(addr.split('@')[0]?.split(':').pop()),
      flags,
      role: flags.includes('slave') ? 'replica' : 'master',
      masterId: master === '-' ? undefined : master,
      slotCount,
    });
  }
  return out;
}

export function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return out;
}

export function runCli(bin: string, args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-8192);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`redis-cli ${args.join(' ')} exited ${code}:\n${output}`));
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
