import { isApiError } from '@baton/client';

/** One sentence for a person; `unauthorized` is handled by the caller (it forgets the key). */
export function describeError(error: unknown): string {
  if (isApiError(error)) return `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}

/** Calls `onUnauthorized` when the API refused the key; returns true when it did. */
export function handleAuth(error: unknown, onUnauthorized: () => void): boolean {
  if (isApiError(error, 'unauthorized', 'forbidden')) {
    onUnauthorized();
    return true;
  }
  return false;
}
