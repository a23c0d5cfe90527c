/**
 * A tiny MCP server (official SDK) whose tools a Baton agent can use: see baton.agents.yaml.
 *
 *   npm run example:mcp-server                  # stdio (Baton's worker starts it: `node examples/mcp-server.ts`)
 *   npm run example:mcp-server -- --http 3333   # Streamable HTTP at http://127.0.0.1:3333/mcp
 *
 * With --http it prints `MCP <url>` once it listens (port 0 picks a free one).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function notesServer(): McpServer {
  const server = new McpServer({ name: 'baton-example-notes', version: '1.0.0' });
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers.',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    ({ a, b }) => ({
      content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool(
    'shout',
    {
      description: 'Says a text out loud (upper case). Needs approval in the example.',
      inputSchema: { text: z.string().min(1) },
    },
    ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }),
  );
  server.registerTool(
    'divide',
    {
      description: 'Divides a by b.',
      inputSchema: { a: z.number(), b: z.number() },
    },
    ({ a, b }) =>
      b === 0
        ? { content: [{ type: 'text', text: 'cannot divide by zero' }], isError: true }
        : { content: [{ type: 'text', text: String(a / b) }] },
  );
  return server;
}

const httpAt = process.argv.indexOf('--http');
if (httpAt === -1) {
  await notesServer().connect(new StdioServerTransport());
} else {
  const port = Number(process.argv[httpAt + 1] ?? 0);
  // Stateless: a server and transport per request, the SDK's simplest Streamable HTTP setup.
  const http = createServer((req, res) => {
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const server = notesServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(error));
      });
  });
  http.listen(port, '127.0.0.1', () => {
    const { port: actual } = http.address() as AddressInfo;
    process.stdout.write(`MCP http://127.0.0.1:${actual}/mcp\n`);
  });
  const stop = (): void => {
    http.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
