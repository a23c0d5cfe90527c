import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router, type Response } from 'express';

/** Where `npm run build:console` (Vite) writes the run console. */
export const DEFAULT_CONSOLE_DIR = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'console',
  'dist',
);

/**
 * The console is static files that call /v1 with the key the person types in, so it needs no
 * auth of its own. The headers keep it from becoming a way around that: scripts and styles only
 * from this origin (no inline code an injected string could use), API calls only to this
 * origin, no framing (clickjacking an Approve button), no referrer leaking run ids.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function securityHeaders(res: Response): void {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  res.setHeader('Permissions-Policy', 'camera=(), microphone=(), geolocation=()');
}

/** GET /console: the built run console (apps/console), or a 503 that says how to build it. */
export function consoleRouter(dir: string = DEFAULT_CONSOLE_DIR): Router {
  const router = Router();
  router.use((req, res, next) => {
    securityHeaders(res);
    // Relative asset URLs need the trailing slash.
    if (req.path === '/' && !req.originalUrl.split('?')[0]!.endsWith('/')) {
      res.redirect(301, `${req.baseUrl}/`);
      return;
    }
    if (!existsSync(join(dir, 'index.html'))) {
      res
        .status(503)
        .type('text/plain')
        .send(
          'The run console is not built. Run `npm run build:console` (npm start and npm test do it).\n',
        );
      return;
    }
    next();
  });
  router.use(
    express.static(dir, {
      index: 'index.html',
      fallthrough: true,
      setHeaders: (res, path) => {
        // File names under assets/ carry a content hash: cache them for good.
        if (path.includes(`${join(dir, 'assets')}`))
          res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
        else res.setHeader('Cache-Control', 'no-cache');
      },
    }),
  );
  return router;
}
