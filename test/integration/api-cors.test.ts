import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';

const APP = 'https://app.example.com';

/** What a browser sends before a cross-origin request with an API key and a JSON body. */
function preflight(base: string, path: string, method: string, origin = APP): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers':
        'authorization,content-type,last-event-id,x-baton-ai-sdk-major',
    },
  });
}

const BROWSER_ROUTES: [string, string][] = [
  ['POST', '/v1/ai-sdk/chat'],
  ['GET', '/v1/ai-sdk/chat/t1/stream'],
  ['POST', '/v1/ag-ui'],
  ['GET', '/v1/runs/r1/events'],
  ['GET', '/v1/runs/r1'],
  ['POST', '/v1/runs'],
  ['POST', '/v1/runs/r1/decisions'],
  ['POST', '/v1/runs/r1/cancel'],
  ['GET', '/v1/threads/t1'],
  ['GET', '/v1/agents'],
];

describe('CORS', () => {
  let c: ApiCluster;
  let open: ApiCluster;
  let base: string;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: { CORS_ORIGINS: `${APP}, https://other.example.com` },
    });
    open = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      workers: 0,
    });
    base = c.apis[0]!.url;
  });
  afterAll(async () => {
    await Promise.all([c.stop(), open.stop()]);
  });

  it('answers a browser preflight on every browser-facing route of an allowed origin', async () => {
    for (const [method, path] of BROWSER_ROUTES) {
      const r = await preflight(base, path, method);
      expect({ path, status: r.status }).toEqual({ path, status: 204 });
      expect(r.headers.get('access-control-allow-origin')).toBe(APP);
      expect(r.headers.get('access-control-allow-methods')).toContain(method);
      expect(r.headers.get('access-control-allow-headers')?.toLowerCase()).toContain(
        'authorization',
      );
      expect(r.headers.get('access-control-allow-headers')?.toLowerCase()).toContain(
        'last-event-id',
      );
    }
  });

  it('allows every method of every route of /openapi.json, DELETE included', async () => {
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const routes = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
        .map((m) => [m.toUpperCase(), path.replace(/\{[^}]+\}/g, 'x1')] as const),
    );
    const methods = new Set(routes.map(([method]) => method));
    expect(methods).toContain('DELETE');
    for (const route of [
      ['DELETE', '/v1/runs/x1'],
      ['DELETE', '/v1/threads/x1'],
      ['DELETE', '/v1/schedules/x1'],
    ])
      expect(routes).toContainEqual(route);
    for (const [method, path] of routes) {
      const r = await preflight(base, path, method);
      expect({ method, path, status: r.status }).toEqual({ method, path, status: 204 });
      expect(r.headers.get('access-control-allow-origin')).toBe(APP);
      expect({
        method,
        path,
        allowed: r.headers.get('access-control-allow-methods')?.split(','),
      }).toEqual({ method, path, allowed: expect.arrayContaining([method]) as string[] });
    }
    // Derived from the routes: a method no route answers is not offered.
    const allowed = (await preflight(base, '/v1/runs', 'POST')).headers.get(
      'access-control-allow-methods',
    );
    expect(allowed?.split(',')).not.toContain('TRACE');
  });

  it('the real request carries the CORS headers, errors included, and exposes Retry-After', async () => {
    const ok = await fetch(`${base}/v1/agents`, {
      headers: { origin: APP, authorization: `Bearer ${KEYS.a}` },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
    expect(ok.headers.get('access-control-expose-headers')).toMatch(/Retry-After/);
    const denied = await fetch(`${base}/v1/agents`, { headers: { origin: APP } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('an origin not in CORS_ORIGINS gets no CORS headers', async () => {
    const r = await preflight(base, '/v1/ai-sdk/chat', 'POST', 'https://evil.example.com');
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('without CORS_ORIGINS no origin is allowed', async () => {
    const r = await preflight(open.apis[0]!.url, '/v1/ai-sdk/chat', 'POST');
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });
});
