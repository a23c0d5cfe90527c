import { BatonClient } from '@baton/client';
import type { Command } from 'commander';
import type { ExitCode } from './exit-codes.ts';
import { colors, plain, type Style } from './render.ts';
import { UsageError } from './usage-error.ts';

/** Where the CLI reads and writes; tests and the bin pass the process's streams. */
export interface CliIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborted on Ctrl-C. */
  readonly signal: AbortSignal;
}

interface GlobalOptions {
  url?: string;
  apiKey?: string;
  color?: boolean;
}

/** What every command's action gets: the streams, the client and style its options ask for. */
export interface CommandContext {
  readonly io: CliIo;
  readonly clientFor: (cmd: Command) => BatonClient;
  readonly styleFor: (cmd: Command) => Style;
  readonly out: (text: string) => void;
  /** One JSON value per line. */
  readonly json: (value: unknown) => void;
  /** The exit code `run()` resolves with when the action returns (default: ok). */
  readonly exitWith: (code: ExitCode) => void;
}

export function commandContext(io: CliIo, exitWith: (code: ExitCode) => void): CommandContext {
  const globals = (cmd: Command): GlobalOptions => cmd.optsWithGlobals<GlobalOptions>();
  const out = (text: string): void => void io.stdout.write(text);
  return {
    io,
    styleFor: (cmd) =>
      io.stdout.isTTY === true && globals(cmd).color !== false && io.env['NO_COLOR'] === undefined
        ? colors
        : plain,
    clientFor: (cmd) => {
      const g = globals(cmd);
      const apiKey = g.apiKey ?? io.env['BATON_API_KEY'];
      if (apiKey === undefined || apiKey === '')
        throw new UsageError(
          'no API key: set BATON_API_KEY or pass --api-key (npm start prints one)',
        );
      return new BatonClient({
        baseUrl: g.url ?? io.env['BATON_URL'] ?? 'http://localhost:3000',
        apiKey,
      });
    },
    out,
    json: (value) => out(`${JSON.stringify(value)}\n`),
    exitWith,
  };
}
