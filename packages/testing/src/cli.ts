/**
 * Test fixture: the `baton` CLI as a real child process, either with pipes (`runCli`) or in a
 * pseudo-terminal (`ptyCli`, through util-linux `script`), where it believes a person is typing.
 */
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const BATON_BIN = resolve(REPO_ROOT, 'packages/cli/bin/baton.js');

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function cliEnv(env: Readonly<Record<string, string | undefined>>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete out['BATON_URL'];
  delete out['BATON_API_KEY'];
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * Runs `baton args…` to its end with piped stdio (not a terminal). The default timeout is for a
 * loaded 2-core machine, where a CLI process alone takes 3-6 s to start (issue 37).
 */
export function runCli(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  timeoutMs = 60_000,
): Promise<CliResult> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [BATON_BIN, ...args], {
      cwd: REPO_ROOT,
      env: cliEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(
        new Error(
          `baton ${args.join(' ')} did not exit within ${timeoutMs} ms\n${stdout}\n${stderr}`,
        ),
      );
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      // 'exit' can come before the pipes are drained; 'close' follows once they are.
      child.on('close', () => res({ code, stdout, stderr }));
    });
  });
}

/** A CLI process in a pseudo-terminal: wait for text on its screen, type answers. */
export interface PtySession {
  /** Everything the terminal showed so far, escape sequences removed. */
  screen(): string;
  /** Resolves when `text` has appeared after the previous waitFor's match. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  type(text: string): void;
  readonly exited: Promise<number | null>;
}

function strip(text: string): string {
  // eslint-disable-next-line no-control-regex -- terminal escape sequences are control characters
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
}

export function ptyCli(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): PtySession {
  const quoted = [process.execPath, BATON_BIN, ...args]
    .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
    .join(' ');
  // script gives the command a pty on its stdin/stdout; -e returns the command's exit code.
  const child = spawn('script', ['-qfec', quoted, '/dev/null'], {
    cwd: REPO_ROOT,
    env: { ...cliEnv(env), TERM: 'dumb' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let raw = '';
  let consumed = 0;
  const listeners = new Set<() => void>();
  const onData = (d: string): void => {
    raw += d;
    for (const l of [...listeners]) l();
  };
  child.stdout.setEncoding('utf8').on('data', onData);
  child.stderr.setEncoding('utf8').on('data', onData);
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  return {
    screen: () => strip(raw),
    exited,
    type: (text) => void child.stdin.write(text),
    waitFor: (text, timeoutMs = 15_000) =>
      new Promise<void>((res, rej) => {
        const check = (): boolean => {
          const rest = strip(raw).slice(consumed);
          const m = typeof text === 'string' ? rest.indexOf(text) : rest.search(text);
          if (m === -1) return false;
          consumed += m + 1;
          return true;
        };
        if (check()) return res();
        const timer = setTimeout(() => {
          listeners.delete(listener);
          rej(new Error(`terminal never showed ${String(text)}; it shows:\n${strip(raw)}`));
        }, timeoutMs);
        const listener = (): void => {
          if (!check()) return;
          clearTimeout(timer);
          listeners.delete(listener);
          res();
        };
        listeners.add(listener);
        void exited.then(() => {
          if (!listeners.has(listener)) return;
          listeners.delete(listener);
          clearTimeout(timer);
          if (check()) res();
          else rej(new Error(`CLI exited before showing ${String(text)}:\n${strip(raw)}`));
        });
      }),
  };
}
