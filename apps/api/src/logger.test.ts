import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { httpLogger, redactUrl } from './logger.ts';

describe('httpLogger', () => {
  it('logs a 4xx at info as one short line without headers or secrets', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const app = express();
    app.use(httpLogger(pino({ level: 'info' }, sink)));
    app.get('/x', (_req, res) => {
      res.status(404).json({ error: { code: 'not_found', message: 'no' } });
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}/x?q=1`, {
      headers: {
        authorization: 'Bearer super-secret-key-1',
        'x-api-key': 'super-secret-key-2',
        cookie: 'session=super-secret-3',
        'user-agent': 'x'.repeat(500),
      },
    });
    server.close();
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    const entry = JSON.parse(line) as { level: number; req: unknown; res: unknown };
    expect(entry.level).toBe(30);
    expect(entry.req).toMatchObject({ method: 'GET', url: '/x?q=1' });
    expect(entry.res).toEqual({ statusCode: 404 });
    expect(line.length).toBeLessThan(400);
    expect(line).not.toMatch(/super-secret/);
  });

  it('at level warn logs a 5xx only (a routine response builds no line)', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const app = express();
    app.use(httpLogger(pino({ level: 'warn' }, sink)));
    app.get('/ok', (_req, res) => {
      res.status(404).json({});
    });
    app.get('/fail', (_req, res) => {
      res.status(503).json({});
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}/ok`);
    await fetch(`http://127.0.0.1:${port}/fail`);
    server.close();
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 50, res: { statusCode: 503 } });
  });
});

describe('redactUrl', () => {
  it.each([
    ['/v1/agents?api_key=s3cret', '/v1/agents?api_key=[redacted]'],
    ['/v1/runs/r/events?children=1&token=s3cret', '/v1/runs/r/events?children=1&token=[redacted]'],
    ['/x?API%5FKEY=s3cret&limit=5', '/x?API%5FKEY=[redacted]&limit=5'],
    [
      '/x?access_token=a&client_secret=b&password=c',
      '/x?access_token=[redacted]&client_secret=[redacted]&password=[redacted]',
    ],
    ['/x?apiKey=a&x-api-key=b&key=c', '/x?apiKey=[redacted]&x-api-key=[redacted]&key=[redacted]'],
    ['/v1/runs?status=done&cursor=abc&limit=5', '/v1/runs?status=done&cursor=abc&limit=5'],
    ['/v1/agents', '/v1/agents'],
  ])('%s → %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  // A key under a name that says nothing, or with no name at all: known by its value.
  const KEY = 'tenant-a-secret-key';
  const isSecret = (value: string): boolean => value === KEY;
  it.each([
    [`/v1/runs?bearer=${KEY}`, '/v1/runs?bearer=[redacted]'],
    [`/v1/runs?k=${KEY}&limit=5`, '/v1/runs?k=[redacted]&limit=5'],
    [`/v1/runs?${KEY}`, '/v1/runs?[redacted]'],
    [`/v1/runs?limit=5&${KEY}=1`, '/v1/runs?limit=5&[redacted]=[redacted]'],
    [`/v1/runs?k=${encodeURIComponent(KEY).replace('-', '%2D')}`, '/v1/runs?k=[redacted]'],
    // Token shapes whatever the name: a JWT, a long random string; not a list cursor or an id.
    ['/x?t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl', '/x?t=[redacted]'],
    ['/x?q=4f9c2b7e1a3d8f6b5c0e9a7d2b4f6e8a&limit=5', '/x?q=[redacted]&limit=5'],
    ['/x?4f9c2b7e1a3d8f6b5c0e9a7d2b4f6e8a', '/x?[redacted]'],
    [
      '/v1/runs?cursor=WzE3MDAwMDAwMDAwMDAsInJ1bi0xMjM0NTY3ODkwYWJjZGVmIl0',
      '/v1/runs?cursor=WzE3MDAwMDAwMDAwMDAsInJ1bi0xMjM0NTY3ODkwYWJjZGVmIl0',
    ],
    [
      '/v1/runs?thread=thread-4f9c2b7e-1a3d-8f6b-5c0e-9a7d2b4f6e8a&agent=assistant',
      '/v1/runs?thread=thread-4f9c2b7e-1a3d-8f6b-5c0e-9a7d2b4f6e8a&agent=assistant',
    ],
  ])('by value: %s → %s', (url, expected) => {
    expect(redactUrl(url, isSecret)).toBe(expected);
  });
});

describe('httpLogger with the keys it must not log', () => {
  it('a configured key in the query string, under any name or none, never reaches the log', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const key = 'super-secret-key-9';
    const app = express();
    app.use(httpLogger(pino({ level: 'info' }, sink), (v) => v === key));
    app.get('/x', (_req, res) => {
      res.status(401).json({});
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    for (const query of [`bearer=${key}`, `k=${key}`, key])
      await fetch(`http://127.0.0.1:${port}/x?${query}`);
    server.close();
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).not.toContain('super-secret');
  });
});
