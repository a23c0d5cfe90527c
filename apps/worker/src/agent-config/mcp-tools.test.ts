import { describe, expect, it } from 'vitest';
import { AgentConfigError } from './agent-config-error.ts';
import {
  McpServerConnection,
  mcpToolDefinitions,
  toBatonResult,
  type McpToolInfo,
} from './mcp-tools.ts';

describe('toBatonResult', () => {
  it('takes structuredContent as the output when the tool gives one', () => {
    expect(
      toBatonResult({
        content: [{ type: 'text', text: '{"sum":3}' }],
        structuredContent: { sum: 3 },
      }),
    ).toEqual({ kind: 'success', output: { sum: 3 } });
  });

  it('parses JSON text, keeps other text, and describes non-text content', () => {
    expect(toBatonResult({ content: [{ type: 'text', text: '[1,2]' }] })).toEqual({
      kind: 'success',
      output: [1, 2],
    });
    expect(toBatonResult({ content: [{ type: 'text', text: '{not json' }] })).toEqual({
      kind: 'success',
      output: '{not json',
    });
    expect(
      toBatonResult({
        content: [
          { type: 'text', text: 'a chart:' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        ],
      }),
    ).toEqual({ kind: 'success', output: ['a chart:', { type: 'image', mimeType: 'image/png' }] });
  });

  it('turns isError into an error result carrying the text', () => {
    expect(
      toBatonResult({ content: [{ type: 'text', text: 'no such file' }], isError: true }),
    ).toEqual({ kind: 'error', message: 'no such file', code: 'mcp_tool_error' });
  });
});

describe('mcpToolDefinitions', () => {
  const server = new McpServerConnection('files', { command: 'unused', args: [] });
  const listing: McpToolInfo[] = [
    { name: 'read', description: 'Reads', inputSchema: { type: 'object' } },
    { name: 'write', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  ];

  it('gates the listed tools only, and keeps the server schema', () => {
    const tools = mcpToolDefinitions(
      server,
      listing,
      { approval: ['write'] },
      'agents[0].tools[0]',
    );
    expect(tools.map((t) => [t.name, t.approval !== undefined])).toEqual([
      ['read', false],
      ['write', true],
    ]);
    expect(tools[1]?.inputJsonSchema).toEqual(listing[1]?.inputSchema);
    expect(tools[1]?.description).toBe('write');
  });

  it('gates every tool with always and filters with include', () => {
    const tools = mcpToolDefinitions(
      server,
      listing,
      { approval: 'always', include: ['read'] },
      'w',
    );
    expect(tools.map((t) => [t.name, t.approval !== undefined])).toEqual([['read', true]]);
  });

  it('refuses names the server does not list, saying which it does', () => {
    expect(() =>
      mcpToolDefinitions(server, listing, { approval: ['delete'] }, 'f: agents[0].tools[0]'),
    ).toThrow(
      new AgentConfigError(
        'agents_file_invalid',
        'f: agents[0].tools[0].approval: MCP server files has no tool "delete"; it lists read, write',
      ),
    );
  });
});
