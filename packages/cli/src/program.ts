import { BatonClientError, isApiError } from '@baton/client';
import { Command, CommanderError } from 'commander';
import { agentsCommand } from './commands/agents.ts';
import { decideCommand } from './commands/decide.ts';
import { devCommand } from './commands/dev.ts';
import { initCommand } from './commands/init.ts';
import { keysCommand } from './commands/keys.ts';
import { runsCommand } from './commands/runs.ts';
import { schedulesCommand } from './commands/schedules.ts';
import { webhooksCommand } from './commands/webhooks.ts';
import { eventsCommand, waitpointCommand } from './commands/waits.ts';
import { commandContext, type CliIo } from './context.ts';
import { UsageError } from './usage-error.ts';
import { EXIT, exitCodeForError, type ExitCode } from './exit-codes.ts';

/**
 * Builds the `baton` program from its commands (one file each under commands/); `run()` parses
 * argv and resolves with the exit code.
 */
export function createCli(io: CliIo): { run(argv: readonly string[]): Promise<ExitCode> } {
  let exitCode: ExitCode = EXIT.ok;
  const program = new Command('baton');
  program
    .description(
      'Baton from the command line: start runs, watch them live, approve tool calls, manage schedules; make a folder for your own agents (init) and run it with a reload loop (dev).',
    )
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
    })
    .showHelpAfterError('(run with --help for usage)')
    .option('--url <url>', 'API base URL (env BATON_URL, default http://localhost:3000)')
    .option('--api-key <key>', 'API key (env BATON_API_KEY)')
    .option('--no-color', 'plain output even in a terminal (also env NO_COLOR)')
    .addHelpText(
      'after',
      `
Exit codes:
  0 ok · 1 internal error · 2 usage · 3 unauthorized/forbidden · 4 not found
  5 refused by the API · 6 API unreachable · 10 run cancelled · 11 run failed
  12 run waiting for a decision (--until suspended) · 130 interrupted`,
    );

  const ctx = commandContext(io, (code) => {
    exitCode = code;
  });
  runsCommand(program, ctx);
  decideCommand(program, ctx);
  agentsCommand(program, ctx);
  schedulesCommand(program, ctx);
  webhooksCommand(program, ctx);
  eventsCommand(program, ctx);
  waitpointCommand(program, ctx);
  keysCommand(program, ctx);
  initCommand(program, ctx);
  devCommand(program, ctx);

  return {
    async run(argv) {
      try {
        await program.parseAsync([...argv], { from: 'user' });
        return exitCode;
      } catch (error) {
        if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
        if (UsageError.isInstance(error)) {
          io.stderr.write(`baton: ${error.message}\n`);
          return EXIT.usage;
        }
        if (io.signal.aborted) return EXIT.interrupted;
        const code = exitCodeForError(error);
        const label = isApiError(error)
          ? `${error.code} (${error.status})`
          : BatonClientError.isInstance(error)
            ? error.code
            : 'error';
        io.stderr.write(
          `baton: ${label}: ${error instanceof Error ? error.message : String(error)}\n`,
        );
        return code;
      }
    },
  };
}
