import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { renderSchedule } from '../render-schedules.ts';

/** `baton schedules pause|resume|delete`: each idempotent, as the API's routes are. */
export function schedulesStateCommands(schedules: Command, ctx: CommandContext): void {
  for (const action of ['pause', 'resume'] as const)
    schedules
      .command(action)
      .description(
        action === 'pause'
          ? 'stop a schedule firing (idempotent)'
          : 'let a paused schedule fire again (idempotent; refused once completed)',
      )
      .argument('<schedule>', 'schedule id')
      .option('--json', 'the schedule as JSON')
      .action(async (scheduleId: string, opts: { json?: boolean }, cmd: Command) => {
        const api = ctx.clientFor(cmd).schedules;
        const signal = ctx.io.signal;
        const next =
          action === 'pause'
            ? await api.pause(scheduleId, { signal })
            : await api.resume(scheduleId, { signal });
        if (opts.json) ctx.json(next);
        else ctx.out(renderSchedule(next, ctx.styleFor(cmd)));
      });

  schedules
    .command('delete')
    .description('delete a schedule; the runs it created stay')
    .argument('<schedule>', 'schedule id')
    .action(async (scheduleId: string, _opts: object, cmd: Command) => {
      await ctx.clientFor(cmd).schedules.delete(scheduleId, { signal: ctx.io.signal });
      ctx.out(`schedule ${scheduleId} deleted\n`);
    });
}
