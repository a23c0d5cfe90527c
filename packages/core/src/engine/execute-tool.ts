import type { RunIdentity, StateScopes, ToolExecutionResult } from '@baton/protocol';
import type { ToolDefinition, ToolWaitpoint } from '../tools.ts';
import { normalizeToolReturn, toolInputSchema } from '../tools.ts';
import type { ToolInvocation } from './tool-round.ts';
import { stopTimer } from '../stop-timer.ts';
import { ToolTimeoutError } from '../errors/tool-timeout-error.ts';

export interface ExecuteToolOptions {
  readonly identity: RunIdentity;
  readonly state: StateScopes;
  readonly signal: AbortSignal;
  readonly now: () => number;
  /** ToolContext.waitpoint for this call (Baton workers). */
  readonly waitpoint?: (opts?: { readonly expiresInMs?: number }) => Promise<ToolWaitpoint>;
  /** Timer for the tool's timeoutMs (the driver's Clock.sleep); without it no timeout applies. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
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
        message: tool?.agent
          ? `agent tool "${invocation.toolName}" runs as a child run, which only Baton workers start`
          : `tool "${invocation.toolName}" cannot execute on the server`,
        code: 'tool_missing',
      },
      patches: [],
      finishedAt: opts.now(),
    };
  }
  const parsed = toolInputSchema(tool).safeParse(invocation.arguments);
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
  // The tool gets its own signal: it aborts on the caller's abort (cancel, lost lease, shutdown)
  // and on the tool's own timeout, which is a tool failure, not an abort of the run.
  const own = new AbortController();
  const forward = (): void => own.abort(opts.signal.reason);
  if (opts.signal.aborted) forward();
  else opts.signal.addEventListener('abort', forward, { once: true });
  const timer = new AbortController();
  const limit = tool.timeoutMs;
  const timedOut =
    limit !== undefined && opts.sleep
      ? opts.sleep(limit, timer.signal).then(
          () => {
            const timeout = new ToolTimeoutError(limit);
            own.abort(timeout);
            throw timeout;
          },
          () => new Promise<never>(() => undefined),
        )
      : null;
  try {
    const running = tool.execute(parsed.data, {
      identity: opts.identity,
      toolCallId: invocation.toolCallId,
      idempotencyKey: invocation.idempotencyKey,
      attempt: invocation.attempt,
      signal: own.signal,
      state: opts.state,
      ...(invocation.resume ? { resume: invocation.resume } : {}),
      ...(opts.waitpoint ? { waitpoint: opts.waitpoint } : {}),
    });
    const returned = normalizeToolReturn(
      await (timedOut ? Promise.race([running, timedOut]) : running),
    );
    // Round-trip through JSON so the result is exactly what a remote worker would deliver.
    const result = JSON.parse(JSON.stringify(returned.result)) as ToolExecutionResult['result'];
    return { ...base, result, patches: [...(returned.patches ?? [])], finishedAt: opts.now() };
  } catch (error) {
    if (opts.signal.aborted) throw error;
    if (ToolTimeoutError.isInstance(error) || ToolTimeoutError.isInstance(own.signal.reason))
      return {
        ...base,
        result: {
          kind: 'error',
          message: `tool "${invocation.toolName}" did not finish within its timeout of ${String(limit)} ms`,
          code: 'tool_timeout',
        },
        patches: [],
        finishedAt: opts.now(),
      };
    return {
      ...base,
      result: { kind: 'error', message: errorMessage(error), code: 'tool_threw' },
      patches: [],
      finishedAt: opts.now(),
    };
  } finally {
    stopTimer(timer);
    opts.signal.removeEventListener('abort', forward);
  }
}
