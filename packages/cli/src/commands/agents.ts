import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { renderAgents } from '../render.ts';

/** `baton agents`: the agents the workers advertise. */
export function agentsCommand(program: Command, ctx: CommandContext): void {
  program
    .command('agents')
    .description('agents the workers advertise')
    .option('--json', 'the list as JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const agents = await ctx.clientFor(cmd).agents.list({ signal: ctx.io.signal });
      if (opts.json) return ctx.json({ agents });
      ctx.out(renderAgents(agents, ctx.styleFor(cmd)));
    });
}
