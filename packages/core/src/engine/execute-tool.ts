import type { JsonValue, RunIdentity, StateScopes, ToolExecutionResult } from '@baton/protocol';
import type { ToolDefinition } from '../tools.ts';
import { normalizeToolReturn } from '../tools.ts';
import type { ToolInvocation } from './tool-round.ts';

export interface ExecuteToolOptions {
  readonly identity: RunIdentity;
  readonly state: StateScopes;
  readonly signal: AbortSignal;
  readonly now: () => number;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Runs one tool. A thrown error or an output that is not JSON is a tool failure the model sees
 * (the loop goes on); an abort propagates so the caller can end the run as Cancelled.
 */
export async function executeTool(
  tool: ToolDefinition | undefined,
  invocation: ToolInvocation,
  opts: ExecuteToolOptions,
): Promise<ToolExecutionResult> {
  const startedAt = opts.now();
  const base = { toolCallId: invocation.toolCallId, attempt: invocation.attempt, startedAt };
  if (!tool?.execute) {
    return {
      ...base,
      result: {
        kind: 'error',
        message: `tool "${invocation.toolName}" cannot execute on the server`,
        code: 'tool_missing',
      },
      patches: [],
      finishedAt: opts.now(),
    };
  }
  const parsed = tool.inputSchema.safeParse(invocation.arguments);
  if (!parsed.success) {
    return {
      ...base,
      result: {
        kind: 'error',
        message: `invalid arguments: ${parsed.error.message}`,
        code: 'invalid_arguments',
      },
      patches: [],
      finishedAt: opts.now(),
    };
  }
  try {
    const returned = normalizeToolReturn(
      await tool.execute(parsed.data, {
        identity: opts.identity,
        toolCallId: invocation.toolCallId,
        idempotencyKey: invocation.idempotencyKey,
        attempt: invocation.attempt,
        signal: opts.signal,
        state: opts.state,
        ...(invocation.resume ? { resume: invocation.resume } : {}),
      }),
    );
    // Round-trip through JSON so the result is exactly what a remote worker would deliver.
    const result = JSON.parse(JSON.stringify(returned.result)) as ToolExecutionResult['result'];
    return { ...base, result, patches: [...(returned.patches ?? [])], finishedAt: opts.now() };
  } catch (error) {
    if (opts.signal.aborted) throw error;
    return {
      ...base,
      result: { kind: 'error', message: errorMessage(error), code: 'tool_threw' },
      patches: [],
      finishedAt: opts.now(),
    };
  }
}

export type { JsonValue };
