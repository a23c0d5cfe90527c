import { BatonError } from '@baton/protocol';

/** A tool that declares neither schema; registries reject it at start-up. */
export class ToolSchemaMissingError extends BatonError<'tool_schema_missing'> {
  constructor(toolName: string) {
    super(
      'tool_schema_missing',
      `tool "${toolName}" declares neither inputSchema nor inputJsonSchema`,
    );
  }
}
