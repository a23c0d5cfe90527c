import { BatonError } from '@baton/protocol';

/**
 * An operator mistake in the environment: main.ts prints its message as one line and exits 1,
 * without a stack trace (the message names the variable and the fix).
 */
export class ConfigError extends BatonError<'config'> {
  constructor(message: string) {
    super('config', message);
  }
}
