import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { renderWebhooks } from '../render-webhooks.ts';

/** `baton webhooks`: a run's webhook endpoints (no secrets) and delivery log. */
export function webhooksCommand(program: Command, ctx: CommandContext): void {
  program
    .command('webhooks')
    .description("a run's webhook endpoints and delivery log, attempt by attempt")
    .argument('<run>', 'run id')
    .option('--json', 'the log as JSON')
    .action(async (runId: string, opts: { json?: boolean }, cmd: Command) => {
      const log = await ctx.clientFor(cmd).runs.webhooks(runId, { signal: ctx.io.signal });
      if (opts.json) ctx.json(log);
      else ctx.out(renderWebhooks(log, ctx.styleFor(cmd)));
    });
}
