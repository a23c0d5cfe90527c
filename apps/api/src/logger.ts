import { randomUUID } from 'node:crypto';
import { REDACT_PATHS, traceLogOptions } from '@baton/runtime/internal';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { pino, type Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { isBoundTo } from './internals/pino/bindings.ts';

/** Worker redaction paths plus what only HTTP requests carry. */
export const API_REDACT_PATHS = [
  ...REDACT_PATHS,
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export function createApiLogger(level = 'info'): Logger {
  return pino({
    name: 'baton-api',
    level,
    redact: { paths: API_REDACT_PATHS, censor: '[redacted]' },
    ...traceLogOptions(),
  });
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A query parameter name that may carry a secret (api_key, apiKey, key, token, access_token,
 * client_secret, password, auth, signature, session…), compared decoded, lower case, letters
 * and digits only. Redacting a harmless parameter costs a log reader little; logging a key
 * hands it to whoever reads the logs.
 */
const CREDENTIAL_NAME_RE = /key|token|secret|passw|pwd|auth|sig|credential|session|cookie/;

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

export function isCredentialParam(name: string): boolean {
  return CREDENTIAL_NAME_RE.test(
    decodedName(name)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, ''),
  );
}

/**
 * The names of the query parameters of `url` that may carry a secret. A bare `?<name>` is left
 * out: its name may be the key itself (`?<key>`), and these names are echoed to the client.
 */
export function credentialParams(url: string): string[] {
  const q = url.indexOf('?');
  if (q === -1) return [];
  return url
    .slice(q + 1)
    .split('&')
    .filter((pair) => pair.includes('='))
    .map((pair) => pair.split('=')[0] ?? '')
    .filter((name) => name !== '' && isCredentialParam(name) && !looksLikeToken(decodedName(name)))
    .map(decodedName);
}

/** Whether a decoded query value (or bare name) is a secret this process knows (a configured key). */
export type SecretTest = (value: string) => boolean;

/**
 * Token shapes, whatever the parameter is called: a JWT, or a long run of a random alphabet
 * (base64/hex: 32+ characters, letters and digits, no separators such as ids' dashes). A
 * parameter's name says nothing about its value when a client puts a key in `?k=` or `?<key>`.
 */
const JWT_RE = /^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const RANDOM_RE = /^[A-Za-z0-9+/_=]{32,}$/;

function looksLikeToken(value: string): boolean {
  return JWT_RE.test(value) || (RANDOM_RE.test(value) && /\d/.test(value) && /[a-z]/i.test(value));
}

/**
 * `url` with every query value that may be a secret replaced by [redacted]: the value of a
 * credential-looking parameter, a value or bare name `isSecret` knows (the API's configured keys:
 * `?bearer=<key>`, `?k=<key>`, `?<key>`), and one shaped like a token (except a list's
 * `cursor`, which is one by design and no secret).
 */
export function redactUrl(raw: string, isSecret: SecretTest = () => false): string {
  const url = redactWaitpointPath(raw);
  const q = url.indexOf('?');
  if (q === -1) return url;
  const secret = (raw: string, shape: boolean): boolean => {
    if (raw === '') return false;
    const decoded = decodedName(raw);
    return isSecret(decoded) || (shape && looksLikeToken(decoded));
  };
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      if (secret(name, true)) return eq === -1 ? '[redacted]' : '[redacted]=[redacted]';
      if (eq === -1) return pair;
      const value = pair.slice(eq + 1);
      const redact = isCredentialParam(name) || secret(value, decodedName(name) !== 'cursor');
      return redact ? `${name}=[redacted]` : pair;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

/** A waitpoint URL's path segment after /w/ or /v1/waitpoints/: the token, a bearer secret. */
const WAITPOINT_PATH_RE = /^(\/w\/|\/v1\/waitpoints\/)[^/?#]*/;

/** `url` with a waitpoint token in its path replaced by [redacted] (logs, traces, errors). */
export function redactWaitpointPath(url: string): string {
  return url.replace(WAITPOINT_PATH_RE, '$1[redacted]');
}

type Bindings = Record<string, unknown>;
type LoggedRequest = IncomingMessage & { principal?: { tenantId: string } };

/** The tenant of an authenticated request, as a binding of its log lines. */
function tenantProps(req: LoggedRequest): Bindings {
  const principal = req.principal;
  return principal ? { tenant: principal.tenantId } : {};
}

const IGNORED = new Set(['/healthz', '/readyz', '/metrics']);

/** Whether the request logs a line when it ends (the probes and scrapes do not). */
function logsSuccess(req: IncomingMessage): boolean {
  return !IGNORED.has(req.url ?? '');
}

function requestId(req: IncomingMessage, res: ServerResponse): string {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID_RE.test(incoming) ? incoming : randomUUID();
  res.setHeader('X-Request-Id', id);
  return id;
}

/**
 * The request log: pino-http's logger (its serializers, the redaction) and its lines, one per
 * request, but the request's child logger (`req.log`, bound to the request) is made only when a
 * line is written: pino-http makes two per request up front (serialising and redacting the
 * request each time), which at the usual level (no line for a routine response) was most of the
 * API's logging cost. The child's bindings do not depend on when it is made: the request's id,
 * method and originalUrl are fixed once this middleware ran, and the bindings its custom props
 * gave at that moment are taken then.
 */
export function httpLogger(logger: Logger, isSecret?: SecretTest): RequestHandler {
  const base = pinoHttp({
    logger,
    // A client's mistake is routine: info, and one short line (method, url, status, code).
    serializers: {
      req: (req: { id?: unknown; method?: string; url?: string }) => ({
        id: req.id,
        method: req.method,
        // Redacted before the cut, so no part of a key survives at the edge.
        url: typeof req.url === 'string' ? redactUrl(req.url, isSecret).slice(0, 200) : req.url,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
  }).logger;
  // 'silent' when the logger would drop the line anyway: nothing is built for it.
  const levelOf = (res: ServerResponse, err: unknown): 'error' | 'info' | 'silent' => {
    const level = err || res.statusCode >= 500 ? 'error' : 'info';
    return logger.isLevelEnabled(level) ? level : 'silent';
  };
  return (req: LoggedRequest, res, next) => {
    // Kept when something before this middleware named the request already.
    if (!(req as { id?: unknown }).id) req.id = requestId(req, res);
    const startedAt = Date.now();
    const early = tenantProps(req);
    let child: Logger | undefined;
    const requestLogger = (): Logger => {
      if (child === undefined) {
        child = base.child({ req }).child(early);
      }
      return child;
    };
    lazyLog(req, requestLogger);
    lazyLog(res, requestLogger);
    const done = (err?: unknown): void => {
      res.removeListener('close', done);
      res.removeListener('finish', done);
      res.removeListener('error', done);
      const level = levelOf(res, err);
      if (level === 'silent') return;
      let log = requestLogger();
      // As pino-http: a child with the tenant unless the logger is bound to it already.
      const props = tenantProps(req);
      if (!isBoundTo(log, props)) log = log.child(props);
      const responseTime = Date.now() - startedAt;
      const failed = err ?? (res as { err?: unknown }).err;
      if (failed || res.statusCode >= 500) {
        const error = failed ?? new Error(`failed with status code ${String(res.statusCode)}`);
        log[level]({ res, err: error, responseTime }, 'request errored');
        return;
      }
      const ended = !req.readableAborted && res.writableEnded;
      log[level]({ res, responseTime }, ended ? 'request completed' : 'request aborted');
    };
    if (logsSuccess(req)) {
      res.on('close', done);
      res.on('finish', done);
    }
    res.on('error', done);
    next();
  };
}

const MAKE_LOG = Symbol('baton.makeLog');
const SET_LOG = Symbol('baton.setLog');
type LazyLogged = { [MAKE_LOG]?: () => Logger; [SET_LOG]?: unknown };
/** Prototypes given the lazy `log` accessor (express's request and response of each app). */
const withLazyLog = new WeakSet<object>();

/**
 * `target.log`: the request's logger, made on first use (pino-http's `req.log` / `res.log`). The
 * accessor sits on the prototype (express gives every request and response its app's), once: a
 * property defined on each request made the object slow to build and to read.
 */
function lazyLog(target: object, make: () => Logger): void {
  const proto = Object.getPrototypeOf(target) as object | null;
  if (proto !== null && !withLazyLog.has(proto)) {
    withLazyLog.add(proto);
    Object.defineProperty(proto, 'log', {
      configurable: true,
      enumerable: false,
      get(this: LazyLogged) {
        return this[SET_LOG] ?? this[MAKE_LOG]?.();
      },
      set(this: LazyLogged, value: unknown) {
        this[SET_LOG] = value;
      },
    });
  }
  (target as LazyLogged)[MAKE_LOG] = make;
}
