import { pino, type DestinationStream, type Logger } from 'pino';
import { traceLogOptions } from './telemetry/trace-log.ts';
import { redactRedisUrl } from './redis/redis-url.ts';
import { processEnv } from './config/process-env.ts';

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
  level: string = processEnv()['LOG_LEVEL'] ?? 'info',
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

/** pino's numeric levels, to the BatonLogger method a line goes to (trace and fatal fold in). */
function methodOf(level: number): keyof Omit<BatonLogger, 'child'> {
  if (level >= 50) return 'error';
  if (level >= 40) return 'warn';
  if (level >= 30) return 'info';
  return 'debug';
}

function isPino(logger: BatonLogger): logger is Logger {
  const candidate = logger as Partial<Logger>;
  return typeof candidate.isLevelEnabled === 'function' && typeof candidate.levels === 'object';
}

/**
 * The pino logger Baton's internals use, from the logger an option was given: a pino logger as
 * it is; any other BatonLogger behind a pino logger that writes to it, so redaction, error
 * serialization and trace ids apply to its lines too (each line reaches it as fields and a
 * message, child bindings among the fields).
 *
 * @internal
 */
export function toPino(logger: BatonLogger, redactPaths: readonly string[] = REDACT_PATHS): Logger {
  if (isPino(logger)) return logger;
  const destination: DestinationStream = {
    write(line: string) {
      const { level, msg, ...fields } = JSON.parse(line) as {
        level: number;
        msg?: string;
      } & Record<string, unknown>;
      const log = logger[methodOf(level)];
      if (msg === undefined) log(fields);
      else log(fields, msg);
    },
  };
  return pino(
    {
      // The receiving logger filters by its own level and adds its own time and host.
      level: 'debug',
      base: undefined,
      timestamp: false,
      redact: { paths: [...redactPaths], censor: '[redacted]' },
      ...traceLogOptions(),
    },
    destination,
  );
}

/** Redis URLs may carry a password: log them without it. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    // A cluster's or Sentinel's list of hosts is no WHATWG URL.
    return /^rediss?\+(cluster|sentinel):\/\//i.test(url)
      ? redactRedisUrl(url)
      : '(unparseable url)';
  }
}
