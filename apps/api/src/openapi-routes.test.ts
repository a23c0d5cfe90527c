import express from 'express';
import { describe, expect, it } from 'vitest';
import { protocolPlugins } from './adapters/plugins.ts';
import { BULL_BOARD_PATH } from './admin.ts';
import { v1Router } from './app.ts';
import type { ApiContext } from './context.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { opsRouter } from './routes/ops.ts';
import { waitpointRouter } from './routes/waits.ts';
import { jwksRouter } from './routes/tokens.ts';

/** What the walk reads of an Express 5 (router 2.x) layer: its own path and, if a router, its stack. */
interface Layer {
  readonly rawPath?: unknown;
  readonly route?: { readonly path: string; readonly methods: Record<string, boolean> } | null;
  readonly handle?: { readonly stack?: readonly Layer[] } | null;
}

/**
 * What the API serves and /openapi.json deliberately leaves out (compared by path prefix): Bull
 * Board, the admin HTML UI over the queues (admin.ts), and the run console's static files
 * (console.ts). Both are middleware, not routes, so the walk would not list them today; they are
 * named here so that they stay out if they ever grow routes. Every other route must be documented.
 */
const UNDOCUMENTED = [BULL_BOARD_PATH, '/console'];

/** "METHOD /path/{param}" (OpenAPI style) for every route under `stack`, nested routers and mount paths included. */
function registered(stack: readonly Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      const path = `${prefix}${layer.route.path}`.replace(/\/$/, '').replace(/:(\w+)/g, '{$1}');
      return Object.keys(layer.route.methods)
        .filter((m) => layer.route!.methods[m] === true && m !== '_all')
        .map((m) => `${m.toUpperCase()} ${path}`);
    }
    if (!layer.handle?.stack) return [];
    const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
    return registered(layer.handle.stack, `${prefix}${mount}`);
  });
}

describe('/openapi.json covers the routes', () => {
  it('documents every route the app registers, and nothing it does not', () => {
    // Building a router registers its routes; no handler runs, so the context is a stub.
    const ctx = { config: { PROTOCOL_DEFAULT_AGENT: 'agent' } } as unknown as ApiContext;
    // Mounted as createApp mounts them (auth, limits and body parsing aside).
    const app = express();
    app.use(opsRouter(ctx));
    app.use(waitpointRouter(ctx.waits, (_req, _res, next) => next()));
    app.use(jwksRouter(ctx));
    for (const plugin of protocolPlugins()) app.use(plugin.path, plugin.router(ctx));
    app.use('/v1', v1Router(ctx));
    const routes = registered((app as unknown as { router: { stack: Layer[] } }).router.stack);

    const doc = buildOpenApiDocument() as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );

    const served = routes.filter((r) => !UNDOCUMENTED.some((p) => r.split(' ')[1]!.startsWith(p)));

    expect(served.length).toBeGreaterThan(20);
    expect([...new Set(served)].sort()).toEqual([...documented].sort());
  });
});
