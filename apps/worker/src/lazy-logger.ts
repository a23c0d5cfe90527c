import type { Bindings, Level, Logger } from 'pino';

const LEVELS: ReadonlySet<PropertyKey> = new Set<Level>([
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
]);
const noop = (): void => undefined;

/**
 * A child logger that is made on first use. pino serializes a child's bindings when the child
 * is made; a step pass that makes one per phase and then logs nothing showed in the worker's
 * profile (~1.4 % of its CPU). A call at a level the parent does not log makes no child either.
 */
export function lazyChild(parent: Logger, bindings: Bindings): Logger {
  let child: Logger | undefined;
  return new Proxy(parent, {
    get(_target, prop) {
      if (child === undefined) {
        if (LEVELS.has(prop) && !parent.isLevelEnabled(prop as Level)) return noop;
        child = parent.child(bindings);
      }
      const value: unknown = Reflect.get(child, prop, child);
      return typeof value === 'function'
        ? (value as (...a: unknown[]) => unknown).bind(child)
        : value;
    },
  });
}
