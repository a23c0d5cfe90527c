import type { ErrorCode } from '@baton/protocol';

/** Base of every error Baton raises on purpose: a stable code plus a message that says what to fix. */
export class BatonError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.details = details;
  }
}

export class IllegalTransitionError extends BatonError {
  constructor(machine: 'run' | 'tool_call', from: string, to: string, subject?: string) {
    super(
      'illegal_transition',
      `${machine === 'run' ? 'run' : 'tool call'}${subject ? ` ${subject}` : ''} cannot move from ${from} to ${to}`,
      { machine, from, to, subject },
    );
  }
}

export class DecisionError extends BatonError {}

export class RunDoneError extends BatonError {
  constructor(runId: string) {
    super('run_done', `run ${runId} has already finished; it accepts no more decisions`);
  }
}

export class UnknownAgentError extends BatonError {
  constructor(agent: string, known: readonly string[]) {
    super(
      'unknown_agent',
      `unknown agent "${agent}"; known agents: ${known.join(', ') || '(none)'}`,
    );
  }
}

export class ValidationError extends BatonError {
  constructor(message: string, details?: unknown) {
    super('validation_failed', message, details);
  }
}
