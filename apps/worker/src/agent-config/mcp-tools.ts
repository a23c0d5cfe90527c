import { toolResult, type ToolDefinition } from '@baton/core';
import type { JsonObject, JsonValue, ToolResult } from '@baton/protocol';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StdioClientTransport,
  getDefaultEnvironment,
} from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AgentConfigError } from './agent-config-error.ts';
import type { McpServerConfig } from './agents-file-schema.ts';

/** What Baton needs of an MCP tool listing. */
export interface McpToolInfo {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: JsonObject;
}

/** The MCP SDK's default per-request limit is 60 s; a Baton tool without timeoutMs has none. */
const NO_LIMIT_MS = 2 ** 31 - 1;

/**
 * One MCP server, shared by every agent of this worker that uses it: connected once, reconnected
 * on the next call when the connection dropped (a restarted server, a closed HTTP session), and
 * closed when the worker stops.
 */
export class McpServerConnection {
  readonly name: string;
  private readonly config: McpServerConfig;
  private client: Promise<Client> | null = null;
  private closed = false;

  constructor(name: string, config: McpServerConfig) {
    this.name = name;
    this.config = config;
  }

  private connect(): Promise<Client> {
    if (this.closed) return Promise.reject(new Error(`MCP server ${this.name} is closed`));
    if (this.client) return this.client;
    const client = new Client({ name: 'baton-worker', version: '1.0.0' });
    const transport =
      'command' in this.config
        ? new StdioClientTransport({
            command: this.config.command,
            args: this.config.args,
            // The SDK passes only a safe subset of the environment by default; keep that base.
            env: { ...getDefaultEnvironment(), ...this.config.env },
            ...(this.config.cwd !== undefined ? { cwd: this.config.cwd } : {}),
          })
        : new StreamableHTTPClientTransport(new URL(this.config.url), {
            ...(this.config.headers ? { requestInit: { headers: this.config.headers } } : {}),
          });
    // A dropped connection (server restarted, HTTP session gone) is replaced on the next call.
    client.onclose = () => {
      if (this.client === connecting) this.client = null;
    };
    const connecting = client.connect(transport).then(() => client);
    connecting.catch(() => {
      if (this.client === connecting) this.client = null;
    });
    this.client = connecting;
    return connecting;
  }

  /** `where` names the server's place in the config for a connection error. */
  async listTools(where = `mcpServers.${this.name}`): Promise<McpToolInfo[]> {
    let client: Client;
    try {
      client = await this.connect();
    } catch (error) {
      const target = 'command' in this.config ? this.config.command : this.config.url;
      throw new AgentConfigError(
        'mcp_unavailable',
        `${where}: cannot connect to ${target}: ${(error as Error).message.split('\n')[0]}`,
        { cause: error },
      );
    }
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      for (const tool of page.tools)
        tools.push({
          name: tool.name,
          ...(tool.description !== undefined ? { description: tool.description } : {}),
          inputSchema: tool.inputSchema as JsonObject,
        });
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  async call(
    name: string,
    args: JsonObject,
    signal: AbortSignal,
    timeoutMs?: number,
  ): Promise<ToolResult> {
    const client = await this.connect();
    const result = await client.callTool({ name, arguments: args }, undefined, {
      signal,
      timeout: timeoutMs ?? NO_LIMIT_MS,
    });
    // Servers of the 2024-10-07 protocol answer { toolResult } instead of { content }.
    if ('toolResult' in result && !('content' in result))
      return toolResult.success((result.toolResult ?? null) as JsonValue);
    return toBatonResult(result as Parameters<typeof toBatonResult>[0]);
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = null;
    if (client) await (await client.catch(() => null))?.close();
  }
}

interface McpContent {
  readonly type: string;
  readonly text?: string;
  readonly mimeType?: string;
}

/**
 * structuredContent is the tool's JSON answer when it has one; otherwise text parts (JSON text
 * parsed) make the output, and other content (images, resources) is described, not inlined.
 */
export function toBatonResult(result: {
  readonly content?: unknown;
  readonly structuredContent?: unknown;
  readonly isError?: unknown;
}): ToolResult {
  const content = (Array.isArray(result.content) ? result.content : []) as McpContent[];
  const texts = content.filter((c) => c.type === 'text').map((c) => c.text ?? '');
  if (result.isError === true)
    return toolResult.error(texts.join('\n') || 'the MCP tool reported an error', 'mcp_tool_error');
  if (result.structuredContent !== undefined && result.structuredContent !== null)
    return toolResult.success(result.structuredContent as JsonValue);
  const parts: JsonValue[] = content.map((c) =>
    c.type === 'text'
      ? parseJsonText(c.text ?? '')
      : { type: c.type, mimeType: c.mimeType ?? null },
  );
  if (parts.length === 1) return toolResult.success(parts[0] ?? null);
  return toolResult.success(parts);
}

function parseJsonText(text: string): JsonValue {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return JSON.parse(trimmed) as JsonValue;
    } catch {
      // plain text that happens to start with a bracket
    }
  }
  return text;
}

export interface McpToolOptions {
  /** Which tools need a human decision first. */
  readonly approval: 'always' | 'never' | readonly string[];
  readonly include?: readonly string[];
  readonly timeoutMs?: number;
}

/** The server's tools as Baton tools, validated by the JSON Schema the server declares. */
export function mcpToolDefinitions(
  server: McpServerConnection,
  tools: readonly McpToolInfo[],
  options: McpToolOptions,
  where: string,
): ToolDefinition[] {
  const listed = new Set(tools.map((t) => t.name));
  const mentioned = [
    ...(options.include ?? []).map((n) => ['include', n] as const),
    ...(Array.isArray(options.approval) ? options.approval : []).map(
      (n: string) => ['approval', n] as const,
    ),
  ];
  for (const [field, name] of mentioned)
    if (!listed.has(name))
      throw new AgentConfigError(
        'agents_file_invalid',
        `${where}.${field}: MCP server ${server.name} has no tool "${name}"; it lists ${[...listed].join(', ') || 'none'}`,
      );
  const chosen = options.include ? tools.filter((t) => options.include?.includes(t.name)) : tools;
  const gated = (name: string): boolean =>
    options.approval === 'always' ||
    (Array.isArray(options.approval) && options.approval.includes(name));
  return chosen.map((tool) => ({
    name: tool.name,
    description: tool.description ?? tool.name,
    inputJsonSchema: tool.inputSchema,
    ...(gated(tool.name) ? { approval: { message: `Allow ${tool.name} (${server.name})?` } } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    execute: async (args, ctx) =>
      server.call(tool.name, args as JsonObject, ctx.signal, options.timeoutMs),
  }));
}
