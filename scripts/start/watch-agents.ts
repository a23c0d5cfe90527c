/**
 * The dev loop's eyes (`baton dev`, BATON_WATCH=1 npm start): the folders of the agent modules
 * and agents files BATON_AGENTS names, watched for saved code or configuration. Each folder is
 * watched on its own (not `recursive`, which would also walk node_modules), skipping
 * node_modules and dot-folders; a folder created later is picked up.
 */
import { readdirSync, statSync, watch, type FSWatcher } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SOURCE = /\.(?:[cm]?[jt]s|json|ya?ml)$/;
const SKIP_DIR = (name: string): boolean => name === 'node_modules' || name.startsWith('.');
const MAX_DEPTH = 6;
const isDir = (path: string): boolean => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

/** The folders holding the file entries of BATON_AGENTS / BATON_AGENTS_FILE (not built-in sets). */
export function agentSourceDirs(
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): string[] {
  const entries = [...(env['BATON_AGENTS'] ?? '').split(','), env['BATON_AGENTS_FILE'] ?? '']
    .map((s) => s.trim())
    .filter(Boolean)
    // `./agents.ts:haiku` names one export of ./agents.ts.
    .map((s) => s.replace(/^(.*\.[cm]?[jt]s):[A-Za-z_$][\w$]*$/, '$1'))
    .filter((s) => SOURCE.test(s));
  const dirs = [...new Set(entries.map((e) => dirname(resolve(cwd, e))))].sort();
  // A folder inside another watched one is already covered.
  return dirs.filter((d) => !dirs.some((o) => o !== d && d.startsWith(o + sep)));
}

export interface AgentWatcher {
  close(): void;
}

/** Calls onChange (debounced) with the changed file, relative to cwd, when a source file changes. */
export function watchAgentSources(
  roots: readonly string[],
  cwd: string,
  onChange: (file: string) => void,
  debounceMs = 300,
): AgentWatcher {
  const watchers = new Map<string, FSWatcher>();
  let timer: NodeJS.Timeout | undefined;
  let changed: string | undefined;
  const fire = (file: string): void => {
    changed = file;
    clearTimeout(timer);
    timer = setTimeout(() => onChange(relative(cwd, changed ?? file) || file), debounceMs);
  };
  const add = (dir: string, depth: number): void => {
    if (watchers.has(dir) || depth > MAX_DEPTH) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, (event, name) => {
        if (!name) return;
        const file = join(dir, name);
        if (event === 'rename' && !SKIP_DIR(name) && isDir(file)) add(file, depth + 1);
        if (SOURCE.test(name)) fire(file);
      });
    } catch {
      return; // not a folder, or gone already
    }
    watcher.on('error', () => {
      watcher.close();
      watchers.delete(dir);
    });
    watchers.set(dir, watcher);
    let children: string[] = [];
    try {
      children = readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory() && !SKIP_DIR(d.name))
        .map((d) => d.name);
    } catch {
      // unreadable: its own events still come
    }
    for (const child of children) add(join(dir, child), depth + 1);
  };
  for (const root of roots) add(root, 0);
  return {
    close() {
      clearTimeout(timer);
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}
