import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const MAIN = join(import.meta.dirname, '../../apps/api/src/main.ts');

export interface ApiProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** SIGKILL: the process dies without releasing anything. */
  kill(): Promise<void>;
}

/** A real API process (`node apps/api/src/main.ts`) on a free port; resolves once it listens. */
export function spawnApi(env: Record<string, string>): Promise<ApiProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`API process did not listen within 20 s:\n${output}`));
    }, 20_000);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const onData = (d: Buffer): void => {
      output += d.toString();
      const m = /LISTENING (\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1]!.replace('localhost', '127.0.0.1'),
          child,
          kill: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
            await exited;
          },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`API process exited (${code}) before listening:\n${output}`));
    });
  });
}
