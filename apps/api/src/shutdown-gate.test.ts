import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { ShutdownGate } from './shutdown-gate.ts';

function get(port: number, path: string, agent: Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ port, path, agent, host: '127.0.0.1' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('ShutdownGate', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  async function start(gate: ShutdownGate): Promise<{ port: number; release: () => void }> {
    let release = (): void => undefined;
    const app = express();
    app.use(gate.middleware);
    app.get('/fast', (_req, res) => {
      res.json({ ok: true });
    });
    app.get('/slow', (_req, res) => {
      release = () => res.json({ slow: true });
    });
    server = createServer(app);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return { port: (server.address() as AddressInfo).port, release: () => release() };
  }

  it('a request on a kept-alive connection after close() gets its connection closed, not an answer', async () => {
    const gate = new ShutdownGate();
    const { port } = await start(gate);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await get(port, '/fast', agent)).status).toBe(200);
    gate.close();
    // Same socket (keep-alive, one socket): the server does not answer it at all.
    await expect(get(port, '/fast', agent)).rejects.toThrow(/socket hang up|ECONNRESET/);
    agent.destroy();
  });

  it('drain waits for the requests in flight, and only for them', async () => {
    const gate = new ShutdownGate();
    const { port, release } = await start(gate);
    const agent = new Agent({ keepAlive: true });
    const slow = get(port, '/slow', agent);
    await new Promise((r) => setTimeout(r, 50));
    gate.close();
    let drained = false;
    const draining = gate.drain(10_000).then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(drained).toBe(false);
    release();
    await expect(slow).resolves.toMatchObject({ status: 200, body: '{"slow":true}' });
    await draining;
    expect(drained).toBe(true);
    agent.destroy();
  });

  it('drain gives up after its grace period', async () => {
    const gate = new ShutdownGate();
    const { port } = await start(gate);
    const agent = new Agent({ keepAlive: true });
    const hanging = get(port, '/slow', agent).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    gate.close();
    await gate.drain(100); // resolves although /slow never answers
    server?.closeAllConnections();
    await hanging;
    agent.destroy();
  });
});
