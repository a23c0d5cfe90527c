import { BatonError } from '@baton/protocol';

/** Promote named a version no worker ever advertised for the agent (404; nothing changed). */
export class UnknownAgentVersionError extends BatonError<'not_found'> {
  constructor(agent: string, version: string, known: readonly string[]) {
    super(
      'not_found',
      `agent ${agent} has no version ${version}; known versions: ${known.length === 0 ? 'none (no worker advertised it)' : known.join(', ')}. Start a worker that serves it first`,
      { agent, version, known: [...known] },
    );
  }
}

/** Rollback with no version to go back to (409; nothing changed). */
export class NothingToRollBackError extends BatonError<'conflict'> {
  constructor(agent: string, current: string | null) {
    super(
      'conflict',
      `agent ${agent} has no version to roll back to (current: ${current ?? 'none'}); promote one by name instead`,
      { agent, current },
    );
  }
}
