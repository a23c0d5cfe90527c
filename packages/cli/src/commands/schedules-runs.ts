import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { parseCount } from '../options.ts';
import { renderRunList } from '../render.ts';

/** `baton schedules runs`: the runs a schedule created, newest first. */
export function schedulesRunsCommand(schedules: Command, ctx: CommandContext): void {
  schedules
    .command('runs')
    .description('the runs a schedule created, newest first')
    .argument('<schedule>', 'schedule id')
    .option('--limit <n>', 'page size (1-100)', parseCount)
    .option('--cursor <cursor>', 'the next page (printed after a full page)')
    .option('--json', 'the page as JSON')
    .action(
      async (
        scheduleId: string,
        opts: { limit?: number; cursor?: string; json?: boolean },
        cmd: Command,
      ) => {
        const page = await ctx.clientFor(cmd).schedules.runs(
          scheduleId,
          {
            ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
            ...(opts.cursor ? { cursor: opts.cursor } : {}),
          },
          { signal: ctx.io.signal },
        );
        if (opts.json) return ctx.json(page);
        const style = ctx.styleFor(cmd);
        ctx.out(renderRunList(page.runs, style));
        if (page.nextCursor)
          ctx.out(
            style.dim(`more: baton schedules runs ${scheduleId} --cursor ${page.nextCursor}\n`),
          );
      },
    );
}
