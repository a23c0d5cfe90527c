import { BatonClient } from '@baton/client';

const KEY = 'baton.apiKey';
const READ_ONLY = 'baton.readOnly';

/**
 * The API key lives in sessionStorage: typed once per tab, gone when the tab closes, never in a
 * cookie (so the API's cookie-less auth stays CSRF-proof) and never in a URL.
 */
export function storedKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(READ_ONLY);
}

/**
 * A read-only link for one run: `/console/#/runs/<runId>?token=<run token>` (a token with
 * run:read for it, e.g. one minted by POST /v1/tokens). The token is in the fragment, which no
 * request carries; it is kept like a key (sessionStorage) and taken out of the address bar at once.
 * Returns whether the console was opened with one (now or earlier in this tab).
 */
export function adoptReadOnlyLink(): boolean {
  const hash = window.location.hash;
  const q = hash.indexOf('?');
  if (q !== -1) {
    const params = new URLSearchParams(hash.slice(q + 1));
    const token = params.get('token');
    if (token) {
      sessionStorage.setItem(KEY, token);
      sessionStorage.setItem(READ_ONLY, '1');
      params.delete('token');
      const rest = params.toString();
      window.history.replaceState(null, '', `${hash.slice(0, q)}${rest ? `?${rest}` : ''}`);
    }
  }
  return sessionStorage.getItem(READ_ONLY) === '1';
}

/** A client for the API that served the console (same origin). */
export function clientFor(key: string): BatonClient {
  return new BatonClient({ baseUrl: window.location.origin, apiKey: key });
}
