import { randomUUID } from 'node:crypto';
import { REDACT_PATHS, traceLogOptions } from '@baton/runtime/internal';
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

/** The names of the query parameters of `url` that may carry a secret. */
export function credentialParams(url: string): string[] {
  const q = url.indexOf('?');
  if (q === -1) return [];
  return url
    .slice(q + 1)
    .split('&')
    .map((pair) => pair.split('=')[0] ?? '')
    .filter((name) => name !== '' && isCredentialParam(name))
    .map(decodedName);
}

/** `url` with the value of every credential-looking query parameter replaced by [redacted]. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      return eq !== -1 && isCredentialParam(name) ? `${name}=[redacted]` : pair;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

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
        // Redacted before the cut, so no part of a key survives at the edge.
        url: typeof req.url === 'string' ? redactUrl(req.url).slice(0, 200) : req.url,
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
