import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { parseCount } from '../options.ts';
import { renderSchedule, renderScheduleList } from '../render-schedules.ts';

/** `baton schedules list` and `baton schedules get`. */
export function schedulesListCommand(schedules: Command, ctx: CommandContext): void {
  schedules
    .command('list')
    .description("the tenant's schedules, newest first")
    .option('--limit <n>', 'page size (1-100)', parseCount)
    .option('--cursor <cursor>', 'the next page (printed after a full page)')
    .option('--json', 'the page as JSON')
    .action(async (opts: { limit?: number; cursor?: string; json?: boolean }, cmd: Command) => {
      const page = await ctx.clientFor(cmd).schedules.list(
        {
          ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
          ...(opts.cursor ? { cursor: opts.cursor } : {}),
        },
        { signal: ctx.io.signal },
      );
      if (opts.json) return ctx.json(page);
      const style = ctx.styleFor(cmd);
      ctx.out(renderScheduleList(page.schedules, style));
      if (page.nextCursor)
        ctx.out(style.dim(`more: baton schedules list --cursor ${page.nextCursor}\n`));
    });

  schedules
    .command('get')
    .description('a schedule: state, next firing, latest firings')
    .argument('<schedule>', 'schedule id')
    .option('--json', 'the schedule as JSON')
    .action(async (scheduleId: string, opts: { json?: boolean }, cmd: Command) => {
      const detail = await ctx.clientFor(cmd).schedules.get(scheduleId, { signal: ctx.io.signal });
      if (opts.json) ctx.json(detail);
      else ctx.out(renderSchedule(detail, ctx.styleFor(cmd)));
    });
}
