import { BatonError } from '@baton/protocol';

/** A tool that ran past its timeoutMs; the model sees it as the tool's failure. */
export class ToolTimeoutError extends BatonError<'tool_timeout'> {
  constructor(timeoutMs: number) {
    super('tool_timeout', `tool timed out after ${timeoutMs} ms`);
  }
}
