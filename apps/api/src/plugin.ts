import type { RequestHandler } from 'express';
import type { ApiContext } from './context.ts';

/**
 * An extra router (e.g. a protocol adapter under apps/api/src/adapters) mounted at `path`.
 * Unless `public` is set it sits behind API-key auth, the JSON body parser and the rate limit,
 * like /v1; errors it passes to next() get the standard error body.
 *
 * In its own module (not app.ts) so the adapters can build plugins without importing the app that
 * mounts them.
 */
export interface ApiPlugin {
  readonly path: string;
  readonly router: (ctx: ApiContext) => RequestHandler;
  readonly public?: boolean;
}
