import type {
  ChildThreadMode,
  DeadlinePolicy,
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
import type { Clock } from './ports.ts';
import { ToolSchemaMissingError } from './errors/tool-schema-missing-error.ts';

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
  /**
   * Creates a waitpoint for this call: a URL anyone holding it can POST the call's answer to,
   * without an API key. Send the URL where it must go (an email, a CI job, a webhook, the
   * ticket's message) and return `toolResult.pending({ ..., waitFor: wp.waitFor })`. A
   * completion that arrives before the suspension is committed is kept and applied then.
   * Present on Baton workers (absent in the in-process runner, which has no HTTP API).
   */
  readonly waitpoint?: (opts?: { readonly expiresInMs?: number }) => Promise<ToolWaitpoint>;
}

/** A waitpoint a tool created for its own call (ToolContext.waitpoint). */
export interface ToolWaitpoint {
  /** Path of the URL (`/w/<token>`): prefix it with the API's public base URL. */
  readonly url: string;
  readonly token: string;
  readonly expiresAt: number;
  /** For the ticket: the snapshot then shows the call waits for a waitpoint until expiresAt. */
  readonly waitFor: { readonly kind: 'waitpoint'; readonly expiresAt: number };
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

/** What makes a tool an agent tool: calling it runs another agent as a child run. */
export interface AgentToolSpec {
  /** The agent the child run executes (advertised by some worker; same tenant as the parent). */
  readonly agent: string;
  /** 'inherit' (default): the child belongs to the parent's thread; 'new': a thread of its own. */
  readonly thread?: ChildThreadMode;
  /** The child's user message from the call's arguments (default: `message`, else the JSON). */
  readonly prompt?: (args: JsonObject) => string;
}

export interface ToolDefinition<I extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  /** The arguments' schema; a tool declares this or `inputJsonSchema` (at least one). */
  readonly inputSchema?: I;
  /**
   * The arguments' JSON Schema, for tools whose schema comes from elsewhere (MCP servers, config
   * files). It validates the arguments when `inputSchema` is absent and is what the model sees.
   */
  readonly inputJsonSchema?: JsonObject;
  /**
   * Requires a human decision before executing (suspends in ToolGate).
   *
   * @default undefined (runs without approval)
   */
  readonly approval?: ApprovalSpec;
  /** Executed by the client: the decision payload becomes the result (UseDecisionAsToolResult). */
  readonly clientSide?: { readonly message?: string; readonly outputSchema?: z.ZodType };
  /**
   * How a Pending result or approval is resumed.
   *
   * @default 'replay_tool_call' (a client-side tool: 'use_decision_as_tool_result')
   */
  readonly resumeMode?: ResumeMode;
  /**
   * Longest one execution may take; past it the tool's signal aborts and the call fails with
   * code 'tool_timeout' (the model sees the error).
   *
   * @default undefined (no limit of Baton's own)
   */
  readonly timeoutMs?: number;
  /**
   * How long a suspended call of this tool (its approval, its client-side result, a pending
   * result) waits for a decision, and what happens then: deny, resume with a payload, cancel the
   * run, or escalate (webhook, then one extension). A pending ticket's own `deadline` wins.
   *
   * @default undefined (the run's, else the agent's `deadline`; else it waits until decided)
   */
  readonly deadline?: DeadlinePolicy;
  /** An agent tool (see agentTool): the call's execution is a child run, not `execute`. */
  readonly agent?: AgentToolSpec;
  readonly execute?: (args: z.infer<I>, ctx: ToolContext) => Promise<ToolReturn | ToolResult>;
}

/**
 * Defines a tool; an identity helper that keeps the schema's inferred type for execute's args.
 * `execute` returns `toolResult.success(output)`, `toolResult.error(message)` or
 * `toolResult.pending(ticket)` (the call suspends until a decision answers it).
 *
 * @example
 * ```ts
 * import { defineTool, toolResult } from '@baton/core';
 * import { z } from 'zod';
 *
 * const deploy = defineTool({
 *   name: 'deploy_service',
 *   description: 'Deploys a service',
 *   inputSchema: z.object({ service: z.string() }),
 *   // Suspends the run until a human sends a resume (or cancel) decision.
 *   approval: { message: (args) => `Deploy ${String(args.service)}?` },
 *   timeoutMs: 60_000,
 *   execute: async ({ service }, ctx) =>
 *     toolResult.success({ service, key: ctx.idempotencyKey }),
 * });
 * ```
 */
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
  /**
   * A durable sleep until `until` (epoch ms): the call suspends with no job and no worker held,
   * and a live worker's timer sweep resumes it then (docs/ARCHITECTURE.md, "Timers"); the tool
   * is executed again with `ctx.resume` set (its payload `{ sleptUntil }`). A decision (resume or
   * cancel) may wake it early; a run's cancel ends it.
   */
  sleep: (until: number, message?: string): ToolResult => ({
    kind: 'pending',
    ticket: {
      reason: 'input',
      sleep: true,
      message: message ?? `Sleeping until ${new Date(until).toISOString()}`,
      resumeMode: 'replay_tool_call',
      deadline: {
        at: until,
        outcome: { action: 'resume', payload: { sleptUntil: new Date(until).toISOString() } },
      },
    },
  }),
};

const SLEEP_INPUT = z
  .object({
    seconds: z
      .number()
      .positive()
      .max(366 * 24 * 3600)
      .optional()
      .describe('How long to wait, in seconds'),
    until: z.iso.datetime({ offset: true }).optional().describe('Wait until this ISO 8601 instant'),
  })
  .refine((v) => (v.seconds === undefined) !== (v.until === undefined), {
    message: 'give exactly one of seconds or until',
  });

/**
 * A built-in tool an agent may list: `baton_sleep` waits for `seconds` or `until` an instant,
 * durably (see toolResult.sleep), and answers `{ sleptUntil }`. `clock`: the worker's (what
 * `seconds` counts from).
 */
export function sleepTool(
  clock: Pick<Clock, 'now'>,
  name = 'baton_sleep',
): ToolDefinition<typeof SLEEP_INPUT> {
  return {
    name,
    description:
      'Waits for a number of seconds, or until an ISO 8601 instant, then continues. Holds no resources while waiting.',
    inputSchema: SLEEP_INPUT,
    execute: async (args, ctx) => {
      if (ctx.resume) return toolResult.success(ctx.resume.payload ?? null);
      const until =
        args.until !== undefined
          ? Date.parse(args.until)
          : clock.now() + (args.seconds ?? 0) * 1000;
      return toolResult.sleep(until);
    },
  };
}

export function toJsonSchema(schema: z.ZodType): JsonObject {
  return z.toJSONSchema(schema, { unrepresentable: 'any' }) as JsonObject;
}

// Converting a JSON Schema is not free and tools live as long as the process: once per tool.
const converted = new WeakMap<ToolDefinition, z.ZodType>();

/** The validator of a tool's arguments: its zod schema, or one built from its JSON Schema. */
export function toolInputSchema(tool: ToolDefinition): z.ZodType {
  if (tool.inputSchema) return tool.inputSchema;
  const cached = converted.get(tool);
  if (cached) return cached;
  if (!tool.inputJsonSchema) throw new ToolSchemaMissingError(tool.name);
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(tool.inputJsonSchema);
  } catch {
    // A schema zod cannot express is left to the tool (an MCP server validates its own input).
    schema = z.looseObject({});
  }
  converted.set(tool, schema);
  return schema;
}

// Every inference request describes the agent's tools, and converting a zod schema to JSON
// Schema is the costly part (about 1 % of a worker's CPU per step when done every time): once
// per tool, shared like a tool's own inputJsonSchema always was.
const described = new WeakMap<ToolDefinition, ToolDescriptor>();

export function describeTool(tool: ToolDefinition): ToolDescriptor {
  let descriptor = described.get(tool);
  if (!descriptor) {
    descriptor = {
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputJsonSchema ?? toJsonSchema(toolInputSchema(tool)),
      approval: tool.approval !== undefined,
      clientSide: tool.clientSide !== undefined,
      ...(tool.agent ? { childAgent: tool.agent.agent } : {}),
    };
    described.set(tool, descriptor);
  }
  return descriptor;
}

export function normalizeToolReturn(value: ToolReturn | ToolResult): ToolReturn {
  return 'kind' in value ? { result: value } : value;
}

const AGENT_TOOL_INPUT = z.object({
  message: z.string().describe('What the agent should do, as a self-contained request'),
});

export interface AgentToolOptions<I extends z.ZodType> {
  readonly description: string;
  /** The tool's name as the model sees it (default: the agent's name). */
  readonly name?: string;
  /** Arguments the model passes (default `{ message: string }`). */
  readonly inputSchema?: I;
  readonly thread?: ChildThreadMode;
  readonly prompt?: (args: JsonObject) => string;
  /** Requires a human decision before the child run starts, like any tool. */
  readonly approval?: ApprovalSpec;
}

/**
 * Exposes another agent as a tool (agent-as-tool). The model sees a normal tool; calling it
 * starts a child run of `agent` (the distributed worker does; see docs/ARCHITECTURE.md, "Child
 * runs") whose answer, error or cancellation becomes the call's result.
 */
export function agentTool<I extends z.ZodType = typeof AGENT_TOOL_INPUT>(
  agent: string,
  opts: AgentToolOptions<I>,
): ToolDefinition<I> {
  return {
    name: opts.name ?? agent,
    description: opts.description,
    inputSchema: (opts.inputSchema ?? AGENT_TOOL_INPUT) as I,
    ...(opts.approval ? { approval: opts.approval } : {}),
    agent: {
      agent,
      ...(opts.thread ? { thread: opts.thread } : {}),
      ...(opts.prompt ? { prompt: opts.prompt } : {}),
    },
  };
}

/** The child run's user message for a call of an agent tool. */
export function agentToolPrompt(spec: AgentToolSpec, args: JsonObject): string {
  if (spec.prompt) return spec.prompt(args);
  const keys = Object.keys(args);
  const message = args['message'];
  if (keys.length === 1 && typeof message === 'string') return message;
  return JSON.stringify(args);
}
