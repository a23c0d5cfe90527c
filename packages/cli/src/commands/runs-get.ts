import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { renderSnapshot } from '../render.ts';

/** `baton runs get`: a run's snapshot. */
export function runsGetCommand(runs: Command, ctx: CommandContext): void {
  runs
    .command('get')
    .description("a run's snapshot: status, waiting calls, tool calls, usage")
    .argument('<run>', 'run id')
    .option('--json', 'the snapshot as JSON')
    .action(async (runId: string, opts: { json?: boolean }, cmd: Command) => {
      const snap = await ctx.clientFor(cmd).runs.get(runId, { signal: ctx.io.signal });
      if (opts.json) ctx.json(snap);
      else ctx.out(renderSnapshot(snap, ctx.styleFor(cmd)));
    });
}
