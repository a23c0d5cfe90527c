/**
 * Paths into a JSON value, for tests that put a wrong value at every field of a valid input
 * (fuzzing a schema or a route field by field).
 */

export type JsonPath = (string | number)[];

/** Every path below a JSON value (objects and arrays included; not the value itself). */
export function pathsOf(value: unknown, prefix: JsonPath = []): JsonPath[] {
  const out: JsonPath[] = prefix.length > 0 ? [prefix] : [];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...prefix, i])));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

/** A copy of `value` with the value at `path` replaced (or removed when `next` is undefined). */
export function withAt(value: unknown, path: JsonPath, next: unknown): unknown {
  if (path.length === 0) return next;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (next === undefined && !Array.isArray(node)) delete node[last];
  else node[last] = next;
  return copy;
}
