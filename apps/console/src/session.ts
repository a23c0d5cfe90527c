import { BatonClient } from '@baton/client';

const KEY = 'baton.apiKey';

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
}

/** A client for the API that served the console (same origin). */
export function clientFor(key: string): BatonClient {
  return new BatonClient({ baseUrl: window.location.origin, apiKey: key });
}
