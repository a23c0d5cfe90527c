import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, consoleRouter } from './console.ts';

let server: Server | undefined;
const dirs: string[] = [];
afterEach(async () => {
  const s = server;
  if (s) await new Promise((r) => s.close(r));
  server = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function serve(dir: string): Promise<string> {
  const app = express();
  app.use('/console', consoleRouter(dir));
  server = createServer(app);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function built(): string {
  const dir = mkdtempSync(join(tmpdir(), 'console-dist-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>c</title>');
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'export {};');
  return dir;
}

describe('consoleRouter', () => {
  it('serves index.html and hashed assets with the CSP and cache headers', async () => {
    const url = await serve(built());
    const index = await fetch(`${url}/console/`);
    expect(index.status).toBe(200);
    expect(await index.text()).toContain('<title>c</title>');
    expect(index.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(index.headers.get('x-frame-options')).toBe('DENY');
    expect(index.headers.get('referrer-policy')).toBe('no-referrer');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const asset = await fetch(`${url}/console/assets/index-abc123.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect(asset.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
  });

  it('redirects /console to /console/ so relative asset URLs resolve', async () => {
    const url = await serve(built());
    const res = await fetch(`${url}/console`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/console/');
  });

  it('answers 503 with the build command when the console is not built', async () => {
    const url = await serve(join(tmpdir(), 'no-such-console-dist'));
    const res = await fetch(`${url}/console/`);
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('npm run build:console');
  });

  it('the CSP allows no inline script or style and no framing', () => {
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    expect(CONSOLE_CSP).toContain("connect-src 'self'");
  });
});
