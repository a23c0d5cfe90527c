import { Script } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { importErrorLocation } from './import-error-location.ts';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
}

describe('importErrorLocation', () => {
  it("reads a syntax error's file, line and column from the header Node puts on its stack", () => {
    // V8 decorates a syntax error's stack as the module loader does: file:line, source, caret.
    const error = thrown(
      () => new Script('const a = 1;\nconst b = ;\n', { filename: '/work/my-agents/agents.js' }),
    );
    expect(importErrorLocation(error, '/work/my-agents')).toBe('agents.js:2:11');
    expect(importErrorLocation(error, '/elsewhere')).toBe('/work/my-agents/agents.js:2:11');
  });

  it("reads the header of type stripping's errors (ERR_INVALID_TYPESCRIPT_SYNTAX)", () => {
    // As Node 24 prints them: the error's line alone, or with the lines around it.
    const error = new SyntaxError("Expected ',', got ';'");
    error.stack = `/p/agents.ts:7\nconst x = {a: 1;};\n               ^\n\nSyntaxError [ERR_INVALID_TYPESCRIPT_SYNTAX]: Expected ',', got ';'\n    at parseTypeScript (node:internal/modules/typescript:72:36)`;
    expect(importErrorLocation(error, '/p')).toBe('agents.ts:7:16');
    error.stack = `/p/agents.ts:4\n  name: 'x',\n  tools: [1;],\n           ^\n};\n\nSyntaxError [ERR_INVALID_TYPESCRIPT_SYNTAX]: Expected ',', got ';'\n    at parseTypeScript (node:internal/modules/typescript:72:36)`;
    expect(importErrorLocation(error, '/p')).toBe('agents.ts:4:12');
  });

  it('takes the first frame of a module that throws while it runs, outside node_modules', () => {
    const error = new TypeError('boom');
    error.stack = [
      'TypeError: boom',
      '    at helper (file:///p/node_modules/lib/index.js:1:5)',
      '    at file:///p/tools/deploy.ts:12:9',
      '    at ModuleJob.run (node:internal/modules/esm/module_job:343:25)',
    ].join('\n');
    expect(importErrorLocation(error, '/p')).toBe('tools/deploy.ts:12:9');
    // A module that is not found: Node's and Baton's frames only; the message names the file.
    const missing = new Error("Cannot find package 'nope' imported from /p/agents.ts");
    missing.stack = `Error: Cannot find package 'nope'\n    at packageResolve (node:internal/modules/esm/resolve:784:25)\n    at async loadModuleAgents (${new URL('./module-agents.ts', import.meta.url).href}:42:24)`;
    expect(importErrorLocation(missing, '/p')).toBe(undefined);
  });
});
