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
});
