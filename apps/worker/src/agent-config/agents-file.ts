import { readFile } from 'node:fs/promises';
import { processEnv } from '@baton/runtime/internal';
import { extname } from 'node:path';
import {
  AiSdkModel,
  agentTool,
  type AgentDefinition,
  type AiSdkTelemetry,
  type ToolDefinition,
} from '@baton/core';
import { trace } from '@opentelemetry/api';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { AgentConfigError } from './agent-config-error.ts';
import {
  AgentsFileSchema,
  formatPath,
  type AgentConfig,
  type AgentsFile,
} from './agents-file-schema.ts';
import { McpServerConnection, mcpToolDefinitions, type McpToolInfo } from './mcp-tools.ts';
import { createProviderModel } from './provider-models.ts';

/** Agents plus what they hold open (MCP connections); close() when the worker stops. */
export interface LoadedAgents {
  readonly agents: AgentDefinition[];
  close(): Promise<void>;
}

export interface AgentsFileOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Parses and validates the text of an agents file; errors name the file, the path and the fix. */
export function parseAgentsFile(text: string, file: string): AgentsFile {
  let raw: unknown;
  try {
    raw = extname(file).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    const detail =
      error instanceof YAMLParseError
        ? `${error.code} at line ${error.linePos?.[0].line ?? '?'}, column ${error.linePos?.[0].col ?? '?'}`
        : (error as Error).message;
    throw new AgentConfigError(
      'agents_file_invalid',
      `${file}: not valid ${extname(file).toLowerCase() === '.json' ? 'JSON' : 'YAML'} (${detail.split('\n')[0]})`,
      { cause: error },
    );
  }
  const parsed = AgentsFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const more =
      parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    throw new AgentConfigError(
      'agents_file_invalid',
      `${file}: ${formatPath(issue?.path ?? [])}: ${issue?.message ?? 'invalid'}${more}`,
    );
  }
  return parsed.data;
}

/**
 * Builds the agents an agents file declares: provider models (keys checked now), MCP tools
 * (servers connected now, to learn their tools' schemas; the connection is then reused).
 */
export async function loadAgentsFile(
  file: string,
  options: AgentsFileOptions = {},
): Promise<LoadedAgents> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new AgentConfigError(
      'agents_file_unreadable',
      `${file}: cannot read the agents file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      { cause: error },
    );
  }
  const config = parseAgentsFile(text, file);
  const env = options.env ?? processEnv();
  const models = config.agents.map((agent, i) =>
    createProviderModel(agent.model, config.providers, env, `${file}: agents[${i}].model`),
  );
  const servers = new Map<string, McpServerConnection>();
  const close = async (): Promise<void> => {
    await Promise.all([...servers.values()].map((s) => s.close().catch(() => undefined)));
  };
  try {
    const listings = new Map<string, McpToolInfo[]>();
    for (const agent of config.agents)
      for (const source of agent.tools) {
        if (listings.has(source.mcp)) continue;
        const server = new McpServerConnection(source.mcp, config.mcpServers[source.mcp]!);
        servers.set(source.mcp, server);
        listings.set(source.mcp, await server.listTools(`${file}: mcpServers.${source.mcp}`));
      }
    const agents = config.agents.map((agent, i): AgentDefinition => {
      const tools: ToolDefinition[] = [];
      agent.tools.forEach((source, j) => {
        const where = `${file}: agents[${i}].tools[${j}]`;
        for (const tool of mcpToolDefinitions(
          servers.get(source.mcp)!,
          listings.get(source.mcp) ?? [],
          {
            approval: source.approval,
            ...(source.include ? { include: source.include } : {}),
            ...(source.timeoutMs !== undefined ? { timeoutMs: source.timeoutMs } : {}),
          },
          where,
        )) {
          if (tools.some((t) => t.name === tool.name))
            throw new AgentConfigError(
              'agents_file_invalid',
              `${where}: tool "${tool.name}" is already provided by another server of this agent; narrow one with include:`,
            );
          tools.push(tool);
        }
      });
      agent.agentTools.forEach((spec, j) => {
        const tool = agentTool(spec.agent, {
          description: spec.description,
          ...(spec.name ? { name: spec.name } : {}),
          ...(spec.thread ? { thread: spec.thread } : {}),
          ...(spec.approval ? { approval: { message: `Start ${spec.agent}?` } } : {}),
        });
        if (tools.some((t) => t.name === tool.name))
          throw new AgentConfigError(
            'agents_file_invalid',
            `${file}: agents[${i}].agentTools[${j}]: tool "${tool.name}" is already defined for this agent; give this one another name:`,
          );
        tools.push(tool);
      });
      return {
        name: agent.name,
        ...(agent.description !== undefined ? { description: agent.description } : {}),
        ...(agent.system !== undefined ? { systemPrompt: agent.system } : {}),
        model: new AiSdkModel(models[i]!, {
          ...(agent.settings ? { settings: agent.settings } : {}),
          ...(agent.telemetry ? { telemetry: telemetryOf(agent.telemetry) } : {}),
        }),
        tools,
        ...(agent.executionMode ? { executionMode: agent.executionMode } : {}),
        ...(agent.replayPolicy ? { replayPolicy: agent.replayPolicy } : {}),
        ...(agent.version ? { version: agent.version } : {}),
        ...(agent.versioning ? { versioning: agent.versioning } : {}),
        ...(agent.stopConditions ? { stopConditions: agent.stopConditions } : {}),
        ...(agent.modelRetry ? { modelRetry: agent.modelRetry } : {}),
      };
    });
    return { agents, close };
  } catch (error) {
    await close();
    throw error;
  }
}

function telemetryOf(config: NonNullable<AgentConfig['telemetry']>): AiSdkTelemetry {
  return {
    isEnabled: config.enabled,
    tracer: trace.getTracer('baton-worker'),
    ...(config.functionId !== undefined ? { functionId: config.functionId } : {}),
    ...(config.metadata ? { metadata: config.metadata } : {}),
    ...(config.recordInputs !== undefined ? { recordInputs: config.recordInputs } : {}),
    ...(config.recordOutputs !== undefined ? { recordOutputs: config.recordOutputs } : {}),
  };
}
