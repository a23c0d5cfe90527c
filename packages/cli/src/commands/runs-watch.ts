import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { parseCount, untilOption } from '../options.ts';
import { watchRun } from '../watch.ts';

/** `baton runs watch`: follows a run live, reconnecting across API restarts. */
export function runsWatchCommand(runs: Command, ctx: CommandContext): void {
  runs
    .command('watch')
    .description('follow a run live; survives API restarts (reconnects with Last-Event-ID)')
    .argument('<run>', 'run id')
    .option('--json', 'one JSON event per line')
    .option('--after <seq>', 'start after this event sequence number', parseCount, 0)
    .addOption(untilOption())
    .option('--no-input', 'never prompt, even in a terminal')
    .action(
      async (
        runId: string,
        opts: { json?: boolean; after: number; until: 'done' | 'suspended'; input: boolean },
        cmd: Command,
      ) => {
        ctx.exitWith(
          await watchRun(ctx, cmd, runId, {
            json: opts.json === true,
            until: opts.until,
            after: opts.after,
            input: opts.input,
          }),
        );
      },
    );
}
