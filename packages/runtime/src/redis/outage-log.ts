import type { Logger } from 'pino';
import { safeUrl } from '../logger.ts';
import { isRedisUnavailable } from './connection.ts';

/** Errors that mean "this process cannot reach or log in to Redis" (not a command's failure). */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);
const CONNECTION_TEXT = /NOAUTH|WRONGPASS|invalid password|invalid username-password/i;

export function isRedisConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  // Some wrappers keep only the message ("getaddrinfo ENOTFOUND redis").
  if ([...CONNECTION_CODES].some((c) => error.message.includes(c))) return true;
  return isRedisUnavailable(error) || CONNECTION_TEXT.test(error.message);
}

export interface RedisOutageLogOptions {
  readonly url: string;
  readonly logger: Logger;
  /** Whether the process' main connection is up (an error from another one is then a blip). */
  readonly isUp: () => boolean;
  /** How often a reminder is logged while Redis stays unreachable (default 30 s). */
  readonly remindEveryMs?: number;
}

/**
 * What an operator reads while Redis cannot be reached: one line saying where the process tries
 * to connect (password hidden), that it keeps retrying, and which setting to check; a reminder
 * every `remindEveryMs` while it lasts; one line when it connects. Every Redis connection of the
 * process (the main client, BullMQ's queues, workers and flow producer, subscribers) reports its
 * errors here: each retries on its own, and logging each failed attempt of each connection with
 * its stack trace buried that one line under dozens a second.
 */
export class RedisOutageLog {
  private readonly opts: RedisOutageLogOptions;
  private readonly where: string;
  private downSince: number | null = null;
  private lastError = '';
  private reminder: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(opts: RedisOutageLogOptions) {
    this.opts = opts;
    this.where = safeUrl(opts.url);
  }

  get down(): boolean {
    return this.downSince !== null;
  }

  /**
   * An error of one of the process' Redis connections. True when it was about reaching Redis
   * (reported here, at most once per outage); false for anything else, which the caller logs.
   */
  connectionError(error: unknown, source = 'redis'): boolean {
    if (!isRedisConnectionError(error)) return false;
    if (this.closed) return true; // connections closing with the process
    this.lastError = error instanceof Error ? error.message : String(error);
    if (this.downSince !== null) return true;
    if (this.opts.isUp()) {
      // The main connection is up: one connection's reconnect, not an outage.
      this.opts.logger.debug({ source, error: this.lastError }, 'redis connection error');
      return true;
    }
    this.downSince = Date.now();
    this.opts.logger.error(
      { redis: this.where, error: this.lastError },
      `cannot reach Redis at ${this.where} (${this.lastError}); retrying until it answers. Check REDIS_URL and that Redis runs and accepts connections there`,
    );
    const every = this.opts.remindEveryMs ?? 30_000;
    this.reminder = setInterval(() => this.remind(), every);
    this.reminder.unref();
    return true;
  }

  /** The main connection is ready. */
  connected(): void {
    if (this.downSince === null) return;
    const seconds = Math.round((Date.now() - this.downSince) / 1_000);
    this.stopReminder();
    this.downSince = null;
    this.opts.logger.info(
      { redis: this.where, downSeconds: seconds },
      `connected to Redis at ${this.where} (unreachable for ${seconds} s)`,
    );
  }

  close(): void {
    this.closed = true;
    this.stopReminder();
  }

  private remind(): void {
    if (this.downSince === null) return;
    const seconds = Math.round((Date.now() - this.downSince) / 1_000);
    this.opts.logger.warn(
      { redis: this.where, error: this.lastError, downSeconds: seconds },
      `still cannot reach Redis at ${this.where} after ${seconds} s (${this.lastError}); retrying. Check REDIS_URL`,
    );
  }

  private stopReminder(): void {
    if (this.reminder !== undefined) clearInterval(this.reminder);
    this.reminder = undefined;
  }
}
