/**
 * Codes of errors that never cross the wire as such. The API maps each one to a public
 * ErrorCode (apps/api/src/errors.ts, one exhaustive table), so adding a code here fails to compile
 * until it is given a public meaning there.
 */

/**
 * Failures on the client's side of the wire (no error body from the API):
 * - `network`: the request or the stream could not reach the API or broke mid-way;
 * - `timeout`: a request, or an event stream that went silent, exceeded its time limit;
 * - `unexpected_response`: an answer that is not the API's (a proxy's HTML page, a status the
 *   route never sends, JSON that does not match the protocol schema);
 * - `stream_gap`: the stream skipped a sequence number (the stream reconnects to fill it);
 * - `reconnect_exhausted`: the stream's give-up policy ran out; `cause` holds the last failure;
 * - `aborted`: the caller's AbortSignal fired.
 */
export type ClientErrorCode =
  'network' | 'timeout' | 'unexpected_response' | 'stream_gap' | 'reconnect_exhausted' | 'aborted';

/** Why the worker could not load its agents; it prints the message as one line and exits 1. */
export type AgentConfigErrorCode =
  | 'agents_file_unreadable'
  | 'agents_file_invalid'
  | 'agents_missing_env'
  | 'agents_module_invalid'
  | 'agents_source_unknown'
  | 'mcp_unavailable';

export type InternalErrorCode =
  | ClientErrorCode
  | AgentConfigErrorCode
  /** A compare-and-set write found another version: the writer reloads and recomputes. */
  | 'version_conflict'
  | 'model_call_timeout'
  | 'tool_timeout'
  | 'tool_schema_missing'
  /** A page cursor that no previous page handed out. */
  | 'invalid_cursor'
  | 'corrupt_checkpoint'
  /** A value in a format of a newer release (formats.ts): left for a process of that release. */
  | 'newer_format'
  /** A fenced write was refused: the worker's lease on the run is no longer current. */
  | 'lease_lost'
  | 'event_gap'
  | 'run_released'
  | 'webhook_secret'
  | 'webhook_attempt'
  /** An operator mistake in the environment (API or tracing variables); the process exits. */
  | 'config'
  /** A payload form field the user typed does not fit its schema (client and CLI). */
  | 'field_invalid'
  /** A command-line mistake found after parsing (CLI exit code 2). */
  | 'usage';
