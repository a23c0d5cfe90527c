import { pino, type DestinationStream, type Logger } from 'pino';
import { traceLogOptions } from './telemetry/trace-log.ts';

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

/** While tracing, each line logged inside a span carries its trace_id and span_id. */
export function createLogger(
  name: string,
  level: string = process.env['LOG_LEVEL'] ?? 'info',
  destination?: DestinationStream,
): Logger {
  const options = {
    name,
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    ...traceLogOptions(),
  };
  return destination ? pino(options, destination) : pino(options);
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
