import type { Express } from 'express';

/*
 * Express's router internals, as of express 5.3 (router 2; package.json pins ~5.3.0): an app's
 * routes are `app.router.stack`, layers whose `route.methods` maps each lower-case method to
 * true (`_all` for app.all), and a mounted router is a layer whose `handle.stack` holds its own
 * layers. Express publishes no list of an app's routes; the CORS preflight answers the methods
 * the routes have (a hand list once left DELETE out). route-methods.test.ts checks the shape on
 * a real app, so an upgrade that changes it fails there, not as a preflight refusing a method.
 */

/** What appRouteMethods reads of a router layer. */
interface RouterLayer {
  readonly route?: { readonly methods?: Readonly<Record<string, boolean | undefined>> } | null;
  readonly handle?: { readonly stack?: readonly RouterLayer[] } | null;
}

/**
 * Every method some route of `app` answers (nested routers included), upper case, plus OPTIONS.
 * Read when called: call it once every route is mounted.
 */
export function appRouteMethods(app: Express): string[] {
  const { stack } = (app as unknown as { router: { stack: readonly RouterLayer[] } }).router;
  const methods = new Set(['OPTIONS']);
  const walk = (layers: readonly RouterLayer[]): void => {
    for (const layer of layers) {
      for (const [method, on] of Object.entries(layer.route?.methods ?? {}))
        if (on === true && method !== '_all') methods.add(method.toUpperCase());
      if (layer.handle?.stack) walk(layer.handle.stack);
    }
  };
  walk(stack);
  return [...methods].sort();
}
