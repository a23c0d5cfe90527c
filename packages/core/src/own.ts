/**
 * Records keyed by user input (tool call ids, state keys) are plain objects, so `record[key]`
 * for `__proto__`, `constructor` or `toString` finds Object.prototype's members. Every lookup by
 * such a key goes through here and sees own properties only.
 */
export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
