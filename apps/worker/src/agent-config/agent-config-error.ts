import { BatonError, type AgentConfigErrorCode } from '@baton/protocol';

export type { AgentConfigErrorCode };

/** Why agents could not be loaded; main.ts prints the message as one line and exits 1. */
export class AgentConfigError extends BatonError<AgentConfigErrorCode> {
  constructor(code: AgentConfigErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, undefined, options);
  }
}
