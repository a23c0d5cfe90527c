import { randomUUID } from 'node:crypto';
import { REDACT_PATHS, traceLogOptions } from '@baton/runtime';
import { pino, type Logger } from 'pino';
import { pinoHttp, type HttpLogger } from 'pino-http';

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

/** pino-http with the redacting logger; X-Request-Id is honored (or generated) and echoed. */
export function httpLogger(logger: Logger): HttpLogger {
  return pinoHttp({
    logger,
    genReqId: (req, res) => {
      const incoming = req.headers['x-request-id'];
      const id =
        typeof incoming === 'string' && REQUEST_ID_RE.test(incoming) ? incoming : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    // A client's mistake is routine: info, and one short line (method, url, status, code).
    // 'silent' when the logger would drop the line anyway: pino-http then skips building it (a
    // child logger with the tenant, the line's object) on every response.
    customLogLevel: (_req, res, err) => {
      const level = err || res.statusCode >= 500 ? 'error' : 'info';
      return logger.isLevelEnabled(level) ? level : 'silent';
    },
    serializers: {
      req: (req: { id?: unknown; method?: string; url?: string }) => ({
        id: req.id,
        method: req.method,
        url: typeof req.url === 'string' ? req.url.slice(0, 200) : req.url,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
    autoLogging: {
      ignore: (req) => req.url === '/healthz' || req.url === '/readyz' || req.url === '/metrics',
    },
    customProps: (req) => {
      const principal = (req as { principal?: { tenantId: string } }).principal;
      return principal ? { tenant: principal.tenantId } : {};
    },
  });
}
