/** Why agents could not be loaded; main.ts prints the message as one line and exits 1. */
export type AgentConfigErrorCode =
  | 'agents_file_unreadable'
  | 'agents_file_invalid'
  | 'agents_missing_env'
  | 'agents_module_invalid'
  | 'agents_source_unknown'
  | 'mcp_unavailable';

export class AgentConfigError extends Error {
  readonly code: AgentConfigErrorCode;

  constructor(code: AgentConfigErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentConfigError';
    this.code = code;
  }
}
