/**
 * docker-compose.yml and docker-compose.cluster.yml cannot be started here (no Docker engine), so
 * what they promise is checked as text: Redis persists every write before answering, and both
 * services insist on it; the cluster variant forms a 3 + 3 cluster and names it in REDIS_URL.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runtimeConfigShape } from '@baton/runtime/internal';

/** `KEY: value` entries of the block whose lines start with `indent` spaces, from `from` on. */
function entriesAt(lines: readonly string[], from: number, indent: number): [string, string][] {
  const out: [string, string][] = [];
  for (let i = from; i < lines.length; i += 1) {
    const line = lines[i]!;
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const depth = line.length - line.trimStart().length;
    if (depth < indent) break;
    if (depth > indent) continue;
    const m = /^\s*([^:\s]+):\s*(.*)$/.exec(line);
    if (m) out.push([m[1]!, m[2]!.replace(/^'(.*)'$/, '$1')]);
  }
  return out;
}

/**
 * A service's environment as compose resolves it: its own entries, and those of an anchor it
 * merges (`<<: *name`). The files' own layout only (a map, no lists): enough for these two.
 */
function environmentOf(file: string, name: string): Record<string, string> {
  const lines = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8').split('\n');
  const start = lines.indexOf(`  ${name}:`);
  expect(start, `${file}: service ${name}`).toBeGreaterThan(-1);
  const envLine = lines.findIndex((l, i) => i > start && l === '    environment:');
  expect(envLine, `${file}: service ${name} has an environment map`).toBeGreaterThan(start);
  const env: Record<string, string> = {};
  for (const [key, value] of entriesAt(lines, envLine + 1, 6)) {
    if (key !== '<<') {
      env[key] = value;
      continue;
    }
    const anchor = lines.findIndex((l) => l.endsWith(`: &${value.replace(/^\*/, '')}`));
    expect(anchor, `${file}: anchor ${value}`).toBeGreaterThan(-1);
    for (const [k, v] of entriesAt(lines, anchor + 1, 2)) env[k] ??= v;
  }
  return env;
}

/**
 * Every setting the API and the workers share (runtimeConfigShape: both write the same keys
 * and queues) that one service is given, the other is given too, with the same value.
 */
function expectSharedSettingsAgree(file: string): void {
  const api = environmentOf(file, 'api');
  const worker = environmentOf(file, 'worker');
  const shared = Object.keys(runtimeConfigShape);
  const pick = (env: Record<string, string>) =>
    Object.fromEntries(shared.filter((k) => k in env).map((k) => [k, env[k]]));
  expect(pick(api), `${file}: the API's shared settings are the worker's`).toEqual(pick(worker));
  expect(Object.keys(pick(api))).toContain('REDIS_URL');
}

const compose = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8');

function service(name: string): string {
  const start = compose.indexOf(`\n  ${name}:\n`);
  expect(start, `service ${name}`).toBeGreaterThan(-1);
  const rest = compose.slice(start + 1);
  const next = rest.slice(1).search(/\n {2}[a-z-]+:\n|\nvolumes:/);
  return next < 0 ? rest : rest.slice(0, next + 1);
}

describe('docker-compose.yml', () => {
  it('runs Redis with an AOF fsynced on every write and noeviction', () => {
    const redis = service('redis');
    expect(redis).toMatch(/'--appendonly',\s*'yes'/);
    expect(redis).toMatch(/'--appendfsync',\s*'always'/);
    expect(redis).toMatch(/'--maxmemory-policy',\s*'noeviction'/);
  });

  it('starts the API and the workers in strict durability mode', () => {
    for (const name of ['api', 'worker']) expect(service(name)).toMatch(/BATON_DURABILITY: strict/);
  });

  it('gives the API and the worker the same value of every setting they must agree on', () => {
    expectSharedSettingsAgree('docker-compose.yml');
  });

  it('archives finished runs in its PostgreSQL, which API and workers wait for', () => {
    expect(service('postgres')).toMatch(/image: postgres:15/);
    expect(service('postgres')).toMatch(/pg_isready/);
    for (const name of ['api', 'worker']) {
      expect(service(name)).toMatch(/ARCHIVE_URL: postgres:\/\/baton:[^\n]*@postgres:5432\/baton/);
      expect(service(name)).toMatch(/postgres:\n\s+condition: service_healthy/);
    }
  });
});

describe('docker-compose.cluster.yml', () => {
  const cluster = readFileSync(
    new URL('../../docker-compose.cluster.yml', import.meta.url),
    'utf8',
  );

  it('runs six cluster-enabled Redis nodes, each announcing its own host name, with noeviction', () => {
    for (let i = 1; i <= 6; i += 1)
      expect(cluster).toMatch(
        new RegExp(`\\n  redis-${i}:\\n    <<: \\*redis-node\\n    hostname: redis-${i}\\n`),
      );
    expect(cluster).toMatch(/--cluster-enabled yes/);
    expect(cluster).toMatch(/--cluster-announce-hostname "\$\$\(hostname\)"/);
    expect(cluster).toMatch(/--maxmemory-policy noeviction/);
  });

  it('forms the cluster once, 3 masters + 3 replicas, before API and worker start', () => {
    expect(cluster).toMatch(
      /redis-cli --cluster create redis-1:6379 redis-2:6379 redis-3:6379 \\\s+redis-4:6379 redis-5:6379 redis-6:6379 --cluster-replicas 1 --cluster-yes/,
    );
    const waits = cluster.match(
      /redis-cluster-init:\n\s+condition: service_completed_successfully/g,
    );
    expect(waits).toHaveLength(2);
  });

  it('gives the API and the worker the same value of every setting they must agree on', () => {
    expectSharedSettingsAgree('docker-compose.cluster.yml');
    // Queue shards spread the queues over the masters: both sides must use them.
    expect(environmentOf('docker-compose.cluster.yml', 'api')['BATON_QUEUE_SHARDS']).toBe(
      '${BATON_QUEUE_SHARDS:-16}',
    );
  });

  it('tells API and worker the cluster through REDIS_URL alone', () => {
    expect(cluster).toMatch(/REDIS_URL: redis\+cluster:\/\/redis-1:6379,redis-2:6379,redis-3:6379/);
    expect(cluster.match(/<<: \*baton-env/g)).toHaveLength(2);
  });
});
