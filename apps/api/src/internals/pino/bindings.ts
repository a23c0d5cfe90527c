import { pino, type Logger } from 'pino';

/*
 * Pino's logger internals, as of pino 10.4 (package.json pins ~10.4.0): a logger keeps its
 * bindings as pre-serialised JSON text under `pino.symbols.chindingsSym` and serialises with the
 * function under `pino.symbols.stringifySym`. pino-http 11 reads them the same way to bind a
 * request's properties only once; the API's request log (logger.ts) does what pino-http does
 * without its per-request cost. bindings.test.ts checks both symbols on real loggers.
 */

/** What isBoundTo reads of a pino logger. */
interface PinoInternals {
  readonly [pino.symbols.stringifySym]: (value: Record<string, unknown>) => string;
  readonly [pino.symbols.chindingsSym]: string;
}

/**
 * Whether `log` (or a parent it was made from) is bound to every property of `bindings` with
 * the same values already, so a child with them would repeat them on each line. `{}` is bound to
 * every logger.
 */
export function isBoundTo(log: Logger, bindings: Record<string, unknown>): boolean {
  const internals = log as unknown as PinoInternals;
  const own = internals[pino.symbols.stringifySym](bindings).replace(/[{}]/g, '');
  return internals[pino.symbols.chindingsSym].includes(own);
}
