import { APICallError } from '@ai-sdk/provider';
import { ModelCallTimeoutError } from './errors/model-call-timeout-error.ts';

/** How hard a worker tries one model call before the run fails (per agent). */
export interface ModelRetryPolicy {
  /** Calls in all, the first included (1 = no retry). */
  readonly maxAttempts: number;
  /** First backoff; each retry doubles it, up to maxDelayMs. */
  readonly baseDelayMs: number;
  /** Longest wait between two calls, Retry-After included: a longer Retry-After ends the run. */
  readonly maxDelayMs: number;
  /** One call (until its stream ends) longer than this is aborted and counts as retryable. */
  readonly callTimeoutMs: number;
}

export const DEFAULT_MODEL_RETRY: ModelRetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  callTimeoutMs: 120_000,
};

export function modelRetryPolicy(partial?: Partial<ModelRetryPolicy>): ModelRetryPolicy {
  return { ...DEFAULT_MODEL_RETRY, ...partial };
}

export interface ModelErrorClass {
  readonly retryable: boolean;
  /** Short, for the model.retry event: 'http 429', 'timeout', 'network: ECONNRESET'. */
  readonly reason: string;
  /** What the provider asked for (Retry-After / retry-after-ms), when it did. */
  readonly retryAfterMs?: number;
}

const RETRYABLE_STATUS = new Set([408, 409, 425, 429]);
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Sorts a failed model call into "try again" or "give up". HTTP statuses decide for provider
 * errors (429, 408, 5xx retry; other 4xx are the request's fault and would fail again); errors
 * without a status are network trouble when their code (or their cause's) says so.
 */
export function classifyModelError(error: unknown, now: number): ModelErrorClass {
  if (ModelCallTimeoutError.isInstance(error)) return { retryable: true, reason: 'timeout' };
  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    const retryAfterMs = retryAfter(error.responseHeaders, now);
    const after = retryAfterMs !== undefined ? { retryAfterMs } : {};
    // A stream cut mid-response carries its 200 status and the socket error as its cause.
    const network = networkReason(error.cause);
    if (network) return { retryable: true, reason: network, ...after };
    if (status === undefined) return { retryable: error.isRetryable, reason: 'network', ...after };
    const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
    return { retryable, reason: `http ${status}`, ...after };
  }
  const network = networkReason(error);
  if (network) return { retryable: true, reason: network };
  return { retryable: false, reason: 'error' };
}

function networkReason(error: unknown): string | null {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return `network: ${code}`;
    // fetch reports a dropped connection as a TypeError whose cause carries the code.
    e = (e as { cause?: unknown }).cause;
  }
  if (error instanceof TypeError && /fetch failed|terminated|network/i.test(error.message))
    return 'network';
  return null;
}

/** Retry-After in seconds or as an HTTP date, or retry-after-ms (OpenAI, Anthropic). */
export function retryAfter(
  headers: Readonly<Record<string, string>> | undefined,
  now: number,
): number | undefined {
  if (!headers) return undefined;
  const get = (name: string): string | undefined => {
    for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v;
    return undefined;
  };
  const ms = Number(get('retry-after-ms'));
  if (get('retry-after-ms') !== undefined && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const value = get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The wait before attempt `attempt + 1` (attempt counts from 1): equal jitter over an exponential
 * backoff, so many runs hitting one rate limit do not come back together; never shorter than
 * what the provider asked for. Null when the provider asks for more than maxDelayMs.
 */
export function retryDelay(
  policy: ModelRetryPolicy,
  attempt: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number | null {
  if (retryAfterMs !== undefined && retryAfterMs > policy.maxDelayMs) return null;
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const jittered = Math.round(ceiling / 2 + (random() * ceiling) / 2);
  return Math.max(jittered, retryAfterMs ?? 0);
}
