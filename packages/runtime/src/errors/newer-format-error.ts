import { BatonError, type FormatKind } from '@baton/protocol';

/**
 * A value written by a newer release of Baton in a format this one does not read
 * (readFormat's `defer`): the job that met it is put back for a newer process, never failed,
 * and an API answers 503 (a newer API serves it; during a rolling upgrade, retry).
 */
export class NewerFormatError extends BatonError<'newer_format'> {
  readonly kind: FormatKind;
  readonly version: number;

  constructor(kind: FormatKind, version: number, what: string) {
    super(
      'newer_format',
      `${what}: ${kind} format ${String(version)} was written by a newer release of Baton; a process of that release reads it`,
    );
    this.kind = kind;
    this.version = version;
  }
}
