export * from './agent-config-error.ts';
export * from './agent-sources.ts';
export * from './agents-file-schema.ts';
export * from './agents-file.ts';
export * from './mcp-tools.ts';
export * from './module-agents.ts';
export * from './provider-models.ts';
