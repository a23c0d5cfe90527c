/**
 * `npm run example:client` when Baton is not where it looks (issue 37: `npm start` on another
 * port, and the example died with a stack trace): one line that says where it looked and what
 * to set, exit code 1. The example against a live API is test/integration/node-versions.test.ts.
 */
import { execFile } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort } from '@baton/testing/redis';

const EXAMPLE = join(
  resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'),
  'examples',
  'client.ts',
);

function example(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const clean = { ...process.env };
  for (const k of ['BATON_URL', 'BATON_API_KEY', 'PORT']) delete clean[k];
  return new Promise((res) => {
    execFile(process.execPath, [EXAMPLE], { env: { ...clean, ...env } }, (error, _out, stderr) =>
      res({ code: typeof error?.code === 'number' ? error.code : 0, stderr }),
    );
  });
}

describe('npm run example:client', () => {
  it('says in one line that nothing answers at BATON_URL, or at PORT, without a stack trace', async () => {
    const port = await freePort();
    for (const [env, url] of [
      [{ BATON_URL: `http://127.0.0.1:${port}` }, `http://127.0.0.1:${port}`],
      [{ PORT: String(port) }, `http://localhost:${port}`],
    ] as const) {
      const r = await example({ ...env, BATON_API_KEY: 'bk_x' });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`cannot reach Baton at ${url}`);
      expect(r.stderr).toContain('set BATON_URL');
      expect(r.stderr).not.toMatch(/^\s+at /m);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('asks for the API key when there is none', async () => {
    const r = await example({});
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('BATON_API_KEY=<the key npm start printed>');
  });
});
