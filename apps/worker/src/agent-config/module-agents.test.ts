import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModuleAgents, splitExport } from './module-agents.ts';

const agent = (name: string) =>
  `{ name: '${name}', model: { id: 'm', async *stream() {} }, tools: [] }`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-module-agents-'));
  await writeFile(join(dir, 'default.ts'), `export default [${agent('a')}, ${agent('b')}];\n`);
  await writeFile(
    join(dir, 'named.ts'),
    `export const one = ${agent('one')};\nexport const two = [${agent('two')}];\nexport const other = 'x';\n`,
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('loadModuleAgents', () => {
  it('takes the default export (an array of agents)', async () => {
    const agents = await loadModuleAgents('./default.ts', dir);
    expect(agents.map((a) => a.name)).toEqual(['a', 'b']);
  });

  it('takes every agent export when there is no default', async () => {
    const agents = await loadModuleAgents('./named.ts', dir);
    expect(agents.map((a) => a.name)).toEqual(['one', 'two']);
  });

  it('takes one export by name', async () => {
    const agents = await loadModuleAgents('./named.ts:two', dir);
    expect(agents.map((a) => a.name)).toEqual(['two']);
  });

  it('says what is wrong with a missing file, export or agent', async () => {
    await expect(loadModuleAgents('./nope.ts', dir)).rejects.toThrow(/no such file/);
    await expect(loadModuleAgents('./named.ts:three', dir)).rejects.toThrow(
      'the module has no export "three" (it exports one, other, two)',
    );
    await expect(loadModuleAgents('./named.ts:other', dir)).rejects.toThrow(
      'export "other" is not an agent',
    );
  });
});

describe('splitExport', () => {
  it('splits only a trailing :identifier after a module extension', () => {
    expect(splitExport('./agents.ts:graph')).toEqual({ path: './agents.ts', exportName: 'graph' });
    expect(splitExport('./agents.ts')).toEqual({ path: './agents.ts' });
    expect(splitExport('C:\\work\\agents.mjs')).toEqual({ path: 'C:\\work\\agents.mjs' });
  });
});
