import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';

/** `baton runs cancel`: requests a run's cancellation (idempotent). */
export function runsCancelCommand(runs: Command, ctx: CommandContext): void {
  runs
    .command('cancel')
    .description('cancel a run (idempotent)')
    .argument('<run>', 'run id')
    .option('--json', 'the answer as JSON')
    .action(async (runId: string, opts: { json?: boolean }, cmd: Command) => {
      const result = await ctx.clientFor(cmd).runs.cancel(runId, { signal: ctx.io.signal });
      if (opts.json) ctx.json(result);
      else ctx.out(`cancel requested; run ${result.runId} is ${result.status}\n`);
    });
}
