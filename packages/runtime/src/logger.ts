import { pino, type DestinationStream, type Logger } from 'pino';
import { traceLogOptions } from './telemetry/trace-log.ts';

/** One log method: a message, or fields and then a message (pino's argument order). */
export interface BatonLogFn {
  (fields: object, message?: string): void;
  (message: string): void;
}

/**
 * The logger Baton's options accept: the structural part of pino it calls, so any logger with
 * these methods fits (pino, the default, does as it is).
 *
 * @example
 * ```ts
 * import { pino } from 'pino';
 * createWorker({ agents, logger: pino({ level: 'debug' }) });
 * ```
 */
export interface BatonLogger {
  debug: BatonLogFn;
  info: BatonLogFn;
  warn: BatonLogFn;
  error: BatonLogFn;
  /** A logger whose lines all carry `bindings`. */
  child(bindings: Record<string, unknown>): BatonLogger;
}

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
