import { BatonError } from '@baton/protocol';

/** A variable with a value Baton cannot honour: the process stops with this one line. */
export class TracingConfigError extends BatonError<'tracing_config'> {
  constructor(message: string) {
    super('tracing_config', message);
  }
}
