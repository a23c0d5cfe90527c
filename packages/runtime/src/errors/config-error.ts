import { BatonError } from '@baton/protocol';

/**
 * An operator mistake in the configuration (an environment variable, or an SDK option): the
 * message names the variable (or option), what it accepts and the fix, and never a secret's value
 * (config/parse-env.ts). The entry points print it as one line and exit 1, without a stack trace.
 */
export class ConfigError extends BatonError<'config'> {
  constructor(message: string) {
    super('config', message);
  }
}
