import {
  AgentVersionSchema,
  VersioningSchema,
  DecisionReplayPolicySchema,
  ExecutionModeSchema,
  StopConditionSchema,
} from '@baton/protocol';
import { z } from 'zod';

/** Providers Baton knows by name; anything else must be declared under `providers:`. */
export const BUILTIN_PROVIDERS = ['openai', 'anthropic', 'google'] as const;

const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'is not an environment variable name (e.g. "MY_API_KEY")');

/**
 * A provider of the file's own: an OpenAI-compatible server (Ollama, vLLM, LM Studio, a proxy) or
 * a built-in provider at another base URL. Its key comes from `apiKeyEnv` (none when unset,
 * as local servers usually want none).
 */
export const ProviderConfigSchema = z.strictObject({
  type: z.enum(['openai-compatible', ...BUILTIN_PROVIDERS]),
  baseURL: z.url({ message: 'is not a URL (e.g. "http://localhost:11434/v1")' }),
  apiKeyEnv: envName.optional(),
  headers: z.record(z.string(), z.string()).optional(),
});
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;

/** An MCP server: a command Baton starts (stdio) or a Streamable HTTP endpoint. */
export const McpServerConfigSchema = z.union([
  z.strictObject({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
  }),
  z.strictObject({
    url: z.url({ message: 'is not a URL (e.g. "http://localhost:3000/mcp")' }),
    headers: z.record(z.string(), z.string()).optional(),
  }),
]);
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

/** `always`: every tool of the server needs a decision; a list: only those tools. */
export const ApprovalConfigSchema = z.union([
  z.enum(['always', 'never']),
  z.array(z.string().min(1)),
]);

export const ToolSourceSchema = z.strictObject({
  /** A key of `mcpServers`. */
  mcp: z.string().min(1),
  /** Only these tools of the server (default: all it lists). */
  include: z.array(z.string().min(1)).optional(),
  approval: ApprovalConfigSchema.default('never'),
  /** Longest one call may take before it fails with tool_timeout. */
  timeoutMs: z.number().int().positive().optional(),
});

/** Another agent exposed as a tool (agent-as-tool): calling it starts a child run of `agent`. */
export const AgentToolConfigSchema = z.strictObject({
  /** The agent the child run executes (from this file or any worker on the same Redis). */
  agent: z.string().min(1).max(128),
  /** The tool's name as the model sees it (default: the agent's name). */
  name: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" and "-" only (1-64)')
    .optional(),
  description: z.string().min(1),
  /** inherit (default): the child joins the parent's thread; new: a thread of its own. */
  thread: z.enum(['inherit', 'new']).optional(),
  /** Ask a human before the child run starts. */
  approval: z.boolean().optional(),
});

const MODEL_HINT = 'use e.g. "openai:gpt-4o" or "<a provider declared under providers>:<model>"';

export const AgentConfigSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'letters, digits, "_", "." and "-" only'),
  description: z.string().optional(),
  model: z.string().refine((m) => /^[^:\s]+:\S+$/.test(m), {
    error: (issue) => `${JSON.stringify(issue.input)} is not "provider:model-id"; ${MODEL_HINT}`,
  }),
  system: z.string().optional(),
  settings: z
    .strictObject({
      temperature: z.number().min(0).max(2).optional(),
      maxOutputTokens: z.number().int().positive().optional(),
      topP: z.number().min(0).max(1).optional(),
      stopSequences: z.array(z.string()).optional(),
      seed: z.number().int().optional(),
    })
    .optional(),
  tools: z.array(ToolSourceSchema).default([]),
  /** Other agents this one may call as tools; the model sees `{ message }` arguments. */
  agentTools: z.array(AgentToolConfigSchema).max(64).default([]),
  executionMode: ExecutionModeSchema.optional(),
  replayPolicy: DecisionReplayPolicySchema.optional(),
  stopConditions: z.array(StopConditionSchema).max(20).optional(),
  /** Its version (default: a hash of its definition); runs stay on the version they began on. */
  version: AgentVersionSchema.optional(),
  /** 'pinned' (default) or 'auto-upgrade' (each next step on the current version). */
  versioning: VersioningSchema.optional(),
  /**
   * AI SDK telemetry for this agent's provider calls: spans go to the global OpenTelemetry
   * tracer (register an SDK, e.g. with `node --import`; without one they cost nothing).
   */
  telemetry: z
    .strictObject({
      enabled: z.boolean().default(true),
      functionId: z.string().optional(),
      metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
      recordInputs: z.boolean().optional(),
      recordOutputs: z.boolean().optional(),
    })
    .optional(),
  modelRetry: z
    .strictObject({
      maxAttempts: z.number().int().min(1).max(20).optional(),
      baseDelayMs: z.number().int().min(0).optional(),
      maxDelayMs: z.number().int().min(0).optional(),
      callTimeoutMs: z.number().int().positive().optional(),
    })
    .optional(),
});
export type AgentConfig = z.infer<typeof AgentConfigSchema>;

export const AgentsFileSchema = z
  .strictObject({
    providers: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/), ProviderConfigSchema).default({}),
    mcpServers: z.record(z.string(), McpServerConfigSchema).default({}),
    agents: z.array(AgentConfigSchema).min(1, 'lists no agent; add at least one under agents:'),
  })
  .superRefine((file, ctx) => {
    const known = new Set<string>([...BUILTIN_PROVIDERS, ...Object.keys(file.providers)]);
    const names = new Set<string>();
    file.agents.forEach((agent, i) => {
      if (names.has(agent.name))
        ctx.addIssue({
          code: 'custom',
          path: ['agents', i, 'name'],
          message: `"${agent.name}" is used by an earlier agent; agent names must be unique`,
        });
      names.add(agent.name);
      const provider = agent.model.split(':')[0] ?? '';
      if (/^[^:\s]+:\S+$/.test(agent.model) && !known.has(provider))
        ctx.addIssue({
          code: 'custom',
          path: ['agents', i, 'model'],
          message:
            `unknown provider "${provider}"; use one of ${[...known].join(', ')}, or declare ` +
            `it under providers: (e.g. ${provider}: { type: openai-compatible, baseURL: ... })`,
        });
      agent.tools.forEach((source, j) => {
        if (!(source.mcp in file.mcpServers))
          ctx.addIssue({
            code: 'custom',
            path: ['agents', i, 'tools', j, 'mcp'],
            message: `no MCP server named "${source.mcp}"; declare it under mcpServers:`,
          });
      });
    });
  });
export type AgentsFile = z.infer<typeof AgentsFileSchema>;

/** `agents[0].tools[1].mcp`: the path as a user finds it in the file. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out || '(file)';
}
