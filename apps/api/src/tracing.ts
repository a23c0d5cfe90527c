/**
 * The API's server span: one per request, named `<METHOD> <route template>` (`POST /v1/runs`,
 * `GET /v1/runs/:id/events`), never the raw URL. The caller's `traceparent` is honoured, and the
 * span is the active context while the request is handled, so the enqueue's producer span (and
 * the step job after it, in a worker) continue its trace. No header, query string or body is
 * recorded: keys and payloads stay out of traces.
 */
import { SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { batonTracer } from '@baton/runtime/internal';
import type { Request, RequestHandler } from 'express';
import { redactWaitpointPath } from './logger.ts';

/** The route template of the last route that matched, taken when the router picks it. */
const ROUTE = Symbol('baton.route');

type TracedRequest = Request & { [ROUTE]?: string; principal?: { tenantId: string } };

function template(path: unknown): string | undefined {
  return typeof path === 'string' ? path : undefined;
}

/**
 * Express sets `req.route` when a route matches and restores `req.baseUrl` when the request
 * leaves a router, so by the time the response ends the mount path may be gone. The template is
 * therefore read at the moment the router assigns the route.
 */
function captureRoute(req: TracedRequest): void {
  let route: unknown;
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => route,
    set: (value: { path?: unknown } | undefined) => {
      route = value;
      const path = template(value?.path);
      if (path !== undefined)
        req[ROUTE] = `${req.baseUrl}${path === '/' && req.baseUrl ? '' : path}`;
    },
  });
}

/** The tracing middleware while tracing, else null (and the app installs nothing). */
export function httpTracing(): RequestHandler | null {
  const tracer = batonTracer();
  if (!tracer) return null;
  return (request, res, next) => {
    const req = request as TracedRequest;
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': req.method,
          'url.scheme': req.protocol,
          'url.path': redactWaitpointPath(req.path),
          'network.protocol.version': req.httpVersion,
        },
      },
      parent,
    );
    captureRoute(req);
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      const route = req[ROUTE];
      if (route !== undefined) {
        span.updateName(`${req.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (req.principal) span.setAttribute('baton.tenant.id', req.principal.tenantId);
      const requestId = res.getHeader('x-request-id');
      if (typeof requestId === 'string') span.setAttribute('baton.request.id', requestId);
      // A client's 4xx is not the server's failure (OpenTelemetry's HTTP server conventions).
      if (res.statusCode >= 500) {
        span.setAttribute('error.type', String(res.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      } else if (!res.writableFinished && !res.headersSent) {
        span.setAttribute('error.type', 'aborted');
      }
      span.end();
    };
    res.once('finish', end);
    res.once('close', end);
    context.with(trace.setSpan(parent, span), next);
  };
}
