/**
 * Nesting limit of JSON accepted from clients. Schema checks, canonical hashing and the engine
 * walk JSON recursively; a body nested thousands deep would overflow the stack there, so it is
 * refused on the raw text, before anything recursive sees it.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * The deepest nesting of arrays and objects in JSON text (UTF-8 bytes), in one linear pass
 * without recursion; brackets inside strings do not count. Stops counting past `stopAt`.
 */
export function jsonDepth(bytes: Uint8Array, stopAt = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i += 1) {
    const b = bytes[i];
    if (inString) {
      if (b === BACKSLASH) i += 1;
      else if (b === QUOTE) inString = false;
      continue;
    }
    if (b === QUOTE) inString = true;
    else if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
      depth += 1;
      if (depth > max) {
        max = depth;
        if (max > stopAt) return max;
      }
    } else if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) depth -= 1;
  }
  return max;
}
