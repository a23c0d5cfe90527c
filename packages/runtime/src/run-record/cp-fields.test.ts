import { globSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Every production source of the repository (the lint rule keeps run keys in this folder). */
function productionSources(): { file: string; text: string }[] {
  return globSync(['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'], {
    cwd: ROOT,
    exclude: (path) => path.includes('node_modules'),
  })
    .filter((f) => !/\.test(-d)?\.ts$/.test(f))
    .map((file) => ({ file, text: readFileSync(`${ROOT}/${file}`, 'utf8') }));
}

/** `${String(step)}` and the like become `<step>`, as the README writes a variable part. */
function normalized(field: string): string {
  return field.replace(/\$\{(?:String\()?([a-zA-Z]+)\)?\}/g, '<$1>');
}

/** Top-level comma-separated arguments of a Lua call's argument text. */
function splitArgs(args: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of args) {
    if (ch === '(' || ch === '{') depth += 1;
    if (ch === ')' || ch === '}') depth -= 1;
    if (ch === ',' && depth === 0) {
      out.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim() !== '') out.push(current.trim());
  return out;
}

/**
 * The fields Lua writes onto a run's `cp` hash: HSET / HSETNX / HINCRBY whose key is `cp` (the
 * run scripts' name for it) or a KEYS[n] that the script's header (`KEYS: …`) names `cp`.
 */
function luaWrites(file: string, text: string): Map<string, string> {
  const found = new Map<string, string>();
  const call = /redis\.call\('(?:HSET|HSETNX|HINCRBY|HINCRBYFLOAT)',\s*(cp|KEYS\[(\d+)\])\s*,/g;
  for (const m of text.matchAll(call)) {
    if (m[2] !== undefined) {
      const header =
        text
          .slice(0, m.index)
          .match(/KEYS: ([^\n]*)\n/g)
          ?.pop() ?? '';
      const names = header.replace(/^KEYS: /, '').split(',');
      if (names[Number(m[2]) - 1]?.trim().split(' ')[0] !== 'cp') continue;
    } else if (!file.includes('/run-record/')) continue;
    // the arguments up to the call's closing parenthesis
    let depth = 1;
    let end = m.index + m[0].length;
    while (depth > 0 && end < text.length) {
      const ch = text[end];
      if (ch === '(') depth += 1;
      if (ch === ')') depth -= 1;
      end += 1;
    }
    const args = splitArgs(text.slice(m.index + m[0].length, end - 1));
    // field, value, field, value…: a literal field name at each even position
    for (let i = 0; i < args.length; i += 2) {
      const literal = /^'([^']+)'$/.exec(args[i] ?? '');
      if (literal) found.set(literal[1]!, file);
    }
  }
  return found;
}

/**
 * The fields TypeScript writes onto a run's `cp` hash: the bookkeeping's HINCRBYs (on a key
 * named `cp`) and the fields the store's set-if-recorded script is handed (`['field', value]`).
 */
function tsWrites(file: string, text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of text.matchAll(/\.(?:hincrby|hset|hsetnx)\(\s*cp\s*,\s*[`']([^`']+)[`']/g))
    found.set(normalized(m[1]!), file);
  const setIf = text.indexOf('this.setIfRecorded(');
  if (setIf >= 0) {
    const call = text.slice(setIf, text.indexOf(');', setIf));
    for (const m of call.matchAll(/\['([a-zA-Z]+)',/g)) found.set(m[1]!, file);
  }
  return found;
}

/** The first column of the README's `cp` table: every backticked field name. */
function documentedFields(): Set<string> {
  const readme = readFileSync(new URL('./README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('### `p:{run:<id>}:cp`');
  const section = readme.slice(start, readme.indexOf('\n### ', start + 1));
  const fields = new Set<string>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const first = line.split('|')[1] ?? '';
    for (const m of first.matchAll(/`([^`]+)`/g)) fields.add(m[1]!);
  }
  return fields;
}

describe("a run's cp fields (README.md)", () => {
  const written = new Map<string, string>();
  for (const { file, text } of productionSources()) {
    for (const [field, where] of luaWrites(file, text)) written.set(field, where);
    for (const [field, where] of tsWrites(file, text)) written.set(field, where);
  }

  it('finds the writes it looks for', () => {
    // the create script's, a lease's, an append's, the bookkeeping's and the store's own
    for (const field of ['version', 'driver', 'streamed', 'stepDeaths:<step>', 'fkey'])
      expect(written.has(field), field).toBe(true);
  });

  it('lists every field any source writes', () => {
    const documented = documentedFields();
    const missing = [...written].filter(([field]) => !documented.has(field));
    expect(missing, 'fields written by these files are missing from README.md').toEqual([]);
  });

  it('lists no field that nothing writes', () => {
    const stale = [...documentedFields()].filter((field) => !written.has(field));
    expect(stale, 'README.md lists fields no source writes').toEqual([]);
  });
});
