/**
 * Issue 22 item 1: `rediss://` with REDIS_TLS_CA_FILE reaches a Redis that serves TLS only, with
 * a certificate signed by a CA that is not in Node's store (a private CA, as managed services and
 * self-hosted clusters use). Real redis-server with --tls-port; certificates made by openssl.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatonRuntime, createRedisClient } from '@baton/runtime';
import { findRedisServer, freePort } from '@baton/testing/redis';
import { silentLogger, testConfig, testPrefix } from '@baton/testing/worker-harness';

const run = promisify(execFile);
let dir: string;
let port: number;
let server: ChildProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-tls-'));
  const at = (f: string): string => join(dir, f);
  const subject = (cn: string): string[] => ['-subj', `/CN=${cn}`];
  await run('openssl', [
    ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1'],
    ...['-keyout', at('ca.key'), '-out', at('ca.crt'), ...subject('baton-test-ca')],
  ]);
  await run('openssl', [
    ...['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', at('srv.key')],
    ...['-out', at('srv.csr'), ...subject('localhost')],
  ]);
  await writeFile(at('ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1');
  await run('openssl', [
    ...['x509', '-req', '-in', at('srv.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key')],
    ...['-CAcreateserial', '-out', at('srv.crt'), '-days', '1', '-extfile', at('ext')],
  ]);
  const bin = await findRedisServer();
  if (!bin) throw new Error('redis-server is needed on PATH for this test');
  port = await freePort();
  server = spawn(
    bin,
    [
      ...['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1'],
      ...['--tls-cert-file', at('srv.crt'), '--tls-key-file', at('srv.key')],
      ...['--tls-ca-cert-file', at('ca.crt'), '--tls-auth-clients', 'no'],
      ...['--save', '', '--dir', dir],
    ],
    { stdio: 'ignore' },
  );
}, 30_000);

afterAll(async () => {
  server?.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

describe('REDIS_URL=rediss://… with REDIS_TLS_CA_FILE', () => {
  it('connects over TLS, trusting the given CA; without it the certificate is refused', async () => {
    const url = `rediss://127.0.0.1:${port}`;
    const settings = { REDIS_URL: url, REDIS_TLS_CA_FILE: join(dir, 'ca.crt') };
    const client = createRedisClient(settings, { role: 'worker', connectionName: 'tls' });
    try {
      expect(await client.ping()).toBe('PONG');
      expect(await client.client('GETNAME')).toBe('tls');
    } finally {
      client.disconnect();
    }

    const untrusting = createRedisClient({ REDIS_URL: url }, { role: 'api', connectionName: 'x' });
    const refused = await new Promise<Error>((resolve) => untrusting.once('error', resolve));
    untrusting.disconnect();
    expect(refused.message).toMatch(/certificate/i);

    // The runtime builds its connections from the same settings.
    const config = {
      ...testConfig(url, testPrefix()),
      REDIS_TLS_CA_FILE: settings.REDIS_TLS_CA_FILE,
    };
    const runtime = new BatonRuntime({ config, logger: silentLogger, role: 'api' });
    try {
      expect(await runtime.waitUntilReady(5_000)).toBe(true);
      expect(await runtime.connection.ping()).toBe('PONG');
    } finally {
      await runtime.close();
    }
  });
});
