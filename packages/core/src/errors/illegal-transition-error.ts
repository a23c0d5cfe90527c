import { BatonError } from '@baton/protocol';

export class IllegalTransitionError extends BatonError<'illegal_transition'> {
  constructor(machine: 'run' | 'tool_call', from: string, to: string, subject?: string) {
    super(
      'illegal_transition',
      `${machine === 'run' ? 'run' : 'tool call'}${subject ? ` ${subject}` : ''} cannot move from ${from} to ${to}`,
      { machine, from, to, subject },
    );
  }
}
