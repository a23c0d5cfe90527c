import { RE2JS, RE2JSException } from 're2js';

/**
 * `content_match` patterns run in workers on model output, so they use RE2 (linear time in the
 * text, no backtracking): a pattern like `^(?:.|.){40}Q` costs microseconds instead of freezing
 * a worker. RE2 syntax: no backreferences and no lookaround.
 */
export const MAX_CONTENT_PATTERN_LENGTH = 512;
/** Compiled program size (instructions): bounds the per-character cost of a match. */
const MAX_CONTENT_PATTERN_PROGRAM = 2_000;
/** Only the last this-many characters of the assistant text are matched. */
export const MAX_CONTENT_MATCH_TEXT = 65_536;

export type ContentPattern = RE2JS;

function flagBits(flags: string | undefined): number {
  let bits = 0;
  for (const f of flags ?? '') {
    if (f === 'i') bits |= RE2JS.CASE_INSENSITIVE;
    else if (f === 'm') bits |= RE2JS.MULTILINE;
    else if (f === 's') bits |= RE2JS.DOTALL;
    // 'u': RE2 always matches Unicode code points.
  }
  return bits;
}

export type CompiledContentPattern =
  { ok: true; pattern: ContentPattern } | { ok: false; message: string };

// Checkpoints carry their stop conditions and are validated (and evaluated) on every step.
const cache = new Map<string, CompiledContentPattern>();
const CACHE_SIZE = 256;

/** Compiles a pattern or returns why it cannot be used (as a message naming the fix). */
export function compileContentPattern(pattern: string, flags?: string): CompiledContentPattern {
  const key = `${flags ?? ''}/${pattern}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const compiled = compileUncached(pattern, flags);
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(key, compiled);
  return compiled;
}

function compileUncached(pattern: string, flags: string | undefined): CompiledContentPattern {
  if (pattern.length > MAX_CONTENT_PATTERN_LENGTH)
    return {
      ok: false,
      message: `pattern is ${pattern.length} characters; the limit is ${MAX_CONTENT_PATTERN_LENGTH}`,
    };
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern, flagBits(flags));
  } catch (error) {
    if (!(error instanceof RE2JSException)) throw error;
    return {
      ok: false,
      message: `pattern is not a valid RE2 regular expression (${error.message}); backreferences and lookaround are not supported`,
    };
  }
  if (compiled.programSize() > MAX_CONTENT_PATTERN_PROGRAM)
    return {
      ok: false,
      message: `pattern compiles to ${compiled.programSize()} instructions (limit ${MAX_CONTENT_PATTERN_PROGRAM}); use smaller repetition counts`,
    };
  return { ok: true, pattern: compiled };
}

/** Whether the pattern matches the (tail of the) text; linear in the text. */
export function contentMatches(pattern: ContentPattern, text: string): boolean {
  const tail =
    text.length > MAX_CONTENT_MATCH_TEXT ? text.slice(text.length - MAX_CONTENT_MATCH_TEXT) : text;
  return pattern.test(tail);
}
