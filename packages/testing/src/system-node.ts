/**
 * Test fixture: the machine's own Node, as a reader's shell finds it. npm scripts put the
 * project's Node 24 first on PATH (node_modules/.bin), and scripts/ensure-node.sh may have put
 * another Node 24 there; the README promises its commands with whatever Node the system has
 * (20.17+, 20 on the CI machine), so tests of that promise run with these dirs taken out.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** PATH without node_modules/.bin dirs and without ensure-node's Node 24. */
export const SYSTEM_PATH = (process.env['PATH'] ?? '')
  .split(delimiter)
  .filter((dir) => dir !== '' && !dir.includes('node_modules') && !/baton[/\\]node\d/.test(dir))
  .join(delimiter);

function onSystemPath(binary: string): string | undefined {
  const dir = SYSTEM_PATH.split(delimiter).find((d) => existsSync(join(d, binary)));
  return dir === undefined ? undefined : join(dir, binary);
}

export interface SystemNode {
  readonly path: string;
  /** `node -v`, e.g. v20.20.2. */
  readonly version: string;
  readonly major: number;
  /** Whether npm is on the system PATH too. */
  readonly npm: boolean;
}

/** The system's node, or undefined when the PATH has none outside the project. */
export function systemNode(): SystemNode | undefined {
  const path = onSystemPath('node');
  if (path === undefined) return undefined;
  const version = execFileSync(path, ['-v'], { encoding: 'utf8' }).trim();
  return {
    path,
    version,
    major: Number(/^v(\d+)/.exec(version)?.[1] ?? 0),
    npm: onSystemPath('npm') !== undefined,
  };
}
