import { pino, type Logger } from 'pino';

/** Secrets never reach logs: credentials and keys are redacted wherever they appear. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'apiKey',
  '*.apiKey',
  'password',
  '*.password',
  'redisUrl',
];

export function createLogger(
  name: string,
  level: string = process.env['LOG_LEVEL'] ?? 'info',
): Logger {
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
}

/** Redis URLs may carry a password: log them without it. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable url)';
  }
}
