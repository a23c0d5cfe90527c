import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { testPrefix } from '@baton/testing/worker-harness';

const MAIN = join(import.meta.dirname, '../../apps/api/src/main.ts');

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the API entry point; stops it once `until` matches its output (or it exits). */
function runApi(env: Record<string, string>, until?: RegExp): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env['PATH'] ?? '', HOST: '127.0.0.1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const check = (): void => {
      if (until !== undefined && until.test(stdout + stderr)) child.kill('SIGTERM');
    };
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      check();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      check();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const noStack = (text: string): void => expect(text).not.toMatch(/^\s+at /m);

describe('API start-up errors an operator can fix', () => {
  it('an invalid variable is one line naming it, exit code 1, no stack trace', async () => {
    const r = await runApi({ PORT: 'eighty', REDIS_URL: inject('redisUrl') });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^baton-api: invalid configuration: PORT="eighty": .*fix the variable/,
    );
    noStack(r.stderr);
  });

  it('a malformed key entry names the variable without echoing the secret', async () => {
    const r = await runApi({
      API_KEYS: 'tenant-a:short',
      REDIS_URL: inject('redisUrl'),
      BATON_PREFIX: testPrefix(),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^baton-api: API_KEYS: the key of tenant "tenant-a" is shorter/);
    expect(r.stderr).not.toContain('short"');
    noStack(r.stderr);
  });

  it('a port in use is a clear message with a hint', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await runApi({
        PORT: String(port),
        API_KEYS: 'tenant-a:tenant-a-secret-key',
        REDIS_URL: inject('redisUrl'),
        BATON_PREFIX: testPrefix(),
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`port ${port} is already in use`);
      expect(r.stderr).toMatch(/set PORT to a free port/);
      noStack(r.stderr);
    } finally {
      taken.close();
    }
  });

  it('no API keys at all: it starts, and warns that every request will be refused', async () => {
    const r = await runApi(
      { PORT: '0', REDIS_URL: inject('redisUrl'), BATON_PREFIX: testPrefix(), LOG_LEVEL: 'warn' },
      /LISTENING/,
    );
    expect(r.stdout).toMatch(/no API keys configured/);
    expect(r.stdout).toContain('LISTENING');
    const adminOnly = await runApi(
      {
        PORT: '0',
        REDIS_URL: inject('redisUrl'),
        BATON_PREFIX: testPrefix(),
        LOG_LEVEL: 'warn',
        ADMIN_KEYS: 'ops:admin-secret-key-1',
      },
      /LISTENING/,
    );
    expect(adminOnly.stdout).toMatch(/no tenant API keys configured/);
  });
});
