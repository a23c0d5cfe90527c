import express from 'express';
import { describe, expect, it } from 'vitest';
import { appRouteMethods } from './route-methods.ts';

/** Contract of express's router internals (route-methods.ts): fails when an upgrade moves them. */
describe('appRouteMethods (express router internals)', () => {
  it('lists the methods of the routes that exist, nested routers included', () => {
    const app = express();
    const inner = express.Router();
    inner.delete('/things/:id', (_req, res) => res.end());
    inner.put('/things/:id', (_req, res) => res.end());
    const outer = express.Router();
    outer.use((_req, _res, next) => next(), inner);
    app.use('/v9', outer);
    app.get('/ping', (_req, res) => res.end());
    expect(appRouteMethods(app)).toEqual(['DELETE', 'GET', 'OPTIONS', 'PUT']);
  });

  it('reads the shape it relies on: app.router.stack, route.methods, handle.stack', () => {
    const app = express();
    const inner = express.Router();
    inner.patch('/x', (_req, res) => res.end());
    app.use('/in', inner);
    const { stack } = (app as unknown as { router: { stack: unknown[] } }).router;
    expect(Array.isArray(stack)).toBe(true);
    const layers = stack as { route?: { methods?: Record<string, boolean> }; handle?: unknown }[];
    const mounted = layers.find((l) => (l.handle as { stack?: unknown } | undefined)?.stack);
    expect(mounted).toBeDefined();
    const innerStack = (mounted?.handle as { stack: { route?: { methods?: object } }[] }).stack;
    expect(innerStack.some((l) => l.route?.methods && 'patch' in l.route.methods)).toBe(true);
    expect(appRouteMethods(app)).toEqual(['OPTIONS', 'PATCH']);
  });
});
