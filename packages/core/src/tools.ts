import type {
  JsonObject,
  JsonValue,
  ResumeMode,
  RunIdentity,
  StatePatch,
  SuspendTicket,
  ToolDescriptor,
  ToolResult,
} from '@baton/protocol';
import { z } from 'zod';

/** A read-only view of state that tools and hooks see. */
export interface StateView {
  readonly run: Readonly<Record<string, JsonValue>>;
  readonly thread: Readonly<Record<string, JsonValue>>;
}

export interface ToolContext {
  readonly identity: RunIdentity;
  readonly toolCallId: string;
  /** Same value on every retry of the same attempt: use it to make side effects idempotent. */
  readonly idempotencyKey: string;
  /** 0 for the first execution, incremented by each replay after a decision. */
  readonly attempt: number;
  readonly signal: AbortSignal;
  readonly state: StateView;
  /** The decision payload when this execution is a replay after a resume decision. */
  readonly resume?: { readonly decisionId: string; readonly payload: JsonValue | undefined };
}

/** What a tool's execute function may return beside the result: state patches to apply. */
export interface ToolReturn {
  readonly result: ToolResult;
  readonly patches?: readonly StatePatch[];
}

export interface ApprovalSpec {
  readonly message?: string | ((args: JsonObject) => string);
  /** Schema of the decision payload (e.g. an edited argument set). */
  readonly responseSchema?: z.ZodType;
}

export interface ToolDefinition<I extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: I;
  /** Requires a human decision before executing (suspends in ToolGate). */
  readonly approval?: ApprovalSpec;
  /** Executed by the client: the decision payload becomes the result (UseDecisionAsToolResult). */
  readonly clientSide?: { readonly message?: string; readonly outputSchema?: z.ZodType };
  /** How a Pending result or approval is resumed; defaults per kind of suspension. */
  readonly resumeMode?: ResumeMode;
  /**
   * Longest one execution may take; past it the tool's signal aborts and the call fails with
   * code 'tool_timeout' (the model sees the error). Unset: no limit of Baton's own.
   */
  readonly timeoutMs?: number;
  readonly execute?: (args: z.infer<I>, ctx: ToolContext) => Promise<ToolReturn | ToolResult>;
}

/** Identity helper that keeps the schema's inferred type for execute's args. */
export function defineTool<I extends z.ZodType>(tool: ToolDefinition<I>): ToolDefinition<I> {
  return tool;
}

export const toolResult = {
  success: (output: JsonValue): ToolResult => ({ kind: 'success', output }),
  warning: (output: JsonValue, message: string): ToolResult => ({
    kind: 'warning',
    output,
    message,
  }),
  error: (message: string, code?: string): ToolResult =>
    code === undefined ? { kind: 'error', message } : { kind: 'error', message, code },
  pending: (ticket: SuspendTicket): ToolResult => ({ kind: 'pending', ticket }),
};

export function toJsonSchema(schema: z.ZodType): JsonObject {
  return z.toJSONSchema(schema, { unrepresentable: 'any' }) as JsonObject;
}

export function describeTool(tool: ToolDefinition): ToolDescriptor {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: toJsonSchema(tool.inputSchema),
    approval: tool.approval !== undefined,
    clientSide: tool.clientSide !== undefined,
  };
}

export function normalizeToolReturn(value: ToolReturn | ToolResult): ToolReturn {
  return 'kind' in value ? { result: value } : value;
}
