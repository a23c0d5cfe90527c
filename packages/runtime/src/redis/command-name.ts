import { createHash } from 'node:crypto';

/**
 * The client-side command name of a script: `base` and the first 8 hex digits of the SHA-1 of its
 * source. A script that changes gets a new name by itself (no digit to bump by hand), so a worker
 * never calls another version of a script under a name it registered for its own, while workers
 * of both versions run side by side in a rolling deploy (each sends its own script's SHA).
 */
export function commandName(base: string, lua: string): string {
  return `${base}_${createHash('sha1').update(lua).digest('hex').slice(0, 8)}`;
}
