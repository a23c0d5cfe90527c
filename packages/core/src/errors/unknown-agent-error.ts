import { BatonError } from '@baton/protocol';

export class UnknownAgentError extends BatonError<'unknown_agent'> {
  constructor(agent: string, known: readonly string[]) {
    super(
      'unknown_agent',
      `unknown agent "${agent}"; known agents: ${known.join(', ') || '(none)'}`,
    );
  }
}
