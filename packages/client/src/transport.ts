import type { z } from 'zod';
import { BatonClientError, errorFromResponse } from './errors.ts';

/** How a {@link BatonClient} reaches the API. */
export interface ClientOptions {
  /** Base URL of the API, e.g. `http://localhost:3000` (a trailing slash is fine). */
  readonly baseUrl: string;
  /**
   * API key, sent as `Authorization: Bearer <key>`.
   *
   * @default undefined (no Authorization header)
   */
  readonly apiKey?: string | undefined;
  /**
   * A Baton token (POST /v1/tokens, a run's publicAccessToken) or an identity provider's, sent
   * as `Authorization: Bearer <token>` when no apiKey is given.
   *
   * @default undefined
   */
  readonly token?: string | undefined;
  /**
   * Gets a token (from your server, which mints it with the tenant key): called before the first
   * request, and once more when a request is answered 401 (the token expired or was revoked),
   * after which that request is sent again, once.
   *
   * @default undefined
   */
  readonly getToken?: (() => string | Promise<string>) | undefined;
  /**
   * fetch implementation; pass one to add tracing, proxies, ...
   *
   * @default globalThis.fetch
   */
  readonly fetch?: typeof fetch;
  /**
   * Extra headers on every request.
   *
   * @default {}
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Time limit of a non-streaming request, in milliseconds.
   *
   * @default 30_000
   */
  readonly timeoutMs?: number;
}

export interface RequestOptions {
  readonly signal?: AbortSignal | undefined;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface JsonResponse<T> {
  readonly body: T;
  readonly status: number;
  readonly headers: Headers;
}

/** One place that turns method + path + body into a validated, typed answer or a typed error. */
export class Transport {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private token: string | undefined;
  private readonly getToken: (() => string | Promise<string>) | undefined;
  /** One refresh at a time: concurrent 401s share it. */
  private refreshing: Promise<string> | null = null;
  private readonly fetchImpl: typeof fetch;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly timeoutMs: number;

  constructor(opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.apiKey = opts.apiKey;
    this.token = opts.token;
    this.getToken = opts.getToken;
    // Bound: browsers throw "Illegal invocation" when fetch is called with another `this`.
    this.fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.headers = opts.headers ?? {};
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  url(path: string, query?: Readonly<Record<string, string | number | undefined>>): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return `${this.baseUrl}${path}${qs === '' ? '' : `?${qs}`}`;
  }

  authHeaders(): Record<string, string> {
    const credential = this.apiKey ?? this.token;
    return credential === undefined ? {} : { authorization: `Bearer ${credential}` };
  }

  /** A fresh token from getToken (shared by concurrent callers). */
  private refresh(): Promise<string> {
    this.refreshing ??= Promise.resolve()
      .then(() => this.getToken!())
      .then((token) => {
        this.token = token;
        return token;
      })
      .finally(() => {
        this.refreshing = null;
      });
    return this.refreshing;
  }

  /**
   * fetch with the client's headers; network failures become `network` errors. With getToken, a
   * 401 gets a new token and the request is sent once more.
   */
  async fetch(
    url: string,
    init: RequestInit & { headers?: Record<string, string> },
  ): Promise<Response> {
    const what = `${init.method ?? 'GET'} ${url}`;
    const refreshes = this.apiKey === undefined && this.getToken !== undefined;
    try {
      if (refreshes && this.token === undefined) await this.refresh();
      const send = (): Promise<Response> =>
        this.fetchImpl(url, {
          ...init,
          headers: { ...this.headers, ...this.authHeaders(), ...init.headers },
        });
      const sentWith = this.token;
      const res = await send();
      if (res.status !== 401 || !refreshes) return res;
      await res.body?.cancel();
      // Another request may have refreshed meanwhile: use its token rather than ask again.
      if (this.token === sentWith) await this.refresh();
      return await send();
    } catch (error) {
      throw wrapFetchError(error, init.signal ?? undefined, what);
    }
  }

  /** A request answered 204 No Content (deletions); anything else but a 2xx throws a typed error. */
  async noContent(method: 'DELETE', path: string, opts: RequestOptions = {}): Promise<void> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
    const res = await this.fetch(this.url(path), { method, headers, signal });
    if (!res.ok) throw await errorFromResponse(res);
    await res.body?.cancel();
  }

  /** A JSON request whose 2xx body must match `schema`; anything else throws a typed error. */
  async json<S extends z.ZodType>(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    schema: S,
    opts: RequestOptions & {
      body?: unknown;
      query?: Readonly<Record<string, string | number | undefined>>;
    } = {},
  ): Promise<JsonResponse<z.output<S>>> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
    const init: RequestInit & { headers: Record<string, string> } = { method, headers, signal };
    if (opts.body !== undefined) {
      init.body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const url = this.url(path, opts.query);
    const res = await this.fetch(url, init);
    if (!res.ok) throw await errorFromResponse(res);
    let json: unknown;
    try {
      json = await res.json();
    } catch (error) {
      throw wrapFetchError(error, signal, `${method} ${path}`, res.status);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new BatonClientError(
        'unexpected_response',
        `${method} ${path}: the response does not match the protocol schema (${parsed.error.issues
          .slice(0, 3)
          .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
          .join('; ')})`,
        { status: res.status, cause: parsed.error },
      );
    return { body: parsed.data, status: res.status, headers: res.headers };
  }
}

/** A fetch/body failure as a typed error: the caller's abort, a timeout, or the network. */
export function wrapFetchError(
  error: unknown,
  signal: AbortSignal | undefined,
  what: string,
  status?: number,
): BatonClientError {
  if (BatonClientError.isInstance(error)) return error;
  const name = (error as { name?: unknown } | null)?.name;
  const opts = status === undefined ? { cause: error } : { cause: error, status };
  if (
    name === 'TimeoutError' ||
    (signal?.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError')
  )
    return new BatonClientError('timeout', `${what} timed out`, opts);
  if (signal?.aborted || name === 'AbortError')
    return new BatonClientError('aborted', `${what} was aborted`, opts);
  const detail =
    error instanceof Error
      ? error.cause instanceof Error
        ? error.cause.message
        : error.message
      : String(error);
  return new BatonClientError('network', `${what} failed: ${detail}`, opts);
}
