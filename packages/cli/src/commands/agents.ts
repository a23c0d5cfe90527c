import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { renderAgents } from '../render.ts';

/** `baton agents`: the agents the workers advertise. */
export function agentsCommand(program: Command, ctx: CommandContext): void {
  const agents = program
    .command('agents')
    .description('agents the workers advertise')
    .option('--json', 'the list as JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const agents = await ctx.clientFor(cmd).agents.list({ signal: ctx.io.signal });
      if (opts.json) return ctx.json({ agents });
      ctx.out(renderAgents(agents, ctx.styleFor(cmd)));
    });
  agents
    .command('promote <agent> <version>')
    .description('new runs of the agent get this version (admin key; every API within 1 s)')
    .option('--json', 'the answer as JSON')
    .action(async (agent: string, version: string, opts: { json?: boolean }, cmd: Command) => {
      const r = await ctx.clientFor(cmd).agents.promote(agent, version, { signal: ctx.io.signal });
      // `--json` may land on `agents` itself (it has one too).
      if (opts.json || cmd.optsWithGlobals<{ json?: boolean }>().json) return ctx.json(r);
      ctx.out(`${r.agent}: new runs get ${r.currentVersion} (was ${r.previousVersion ?? '-'})\n`);
    });
  agents
    .command('rollback <agent>')
    .description(
      'new runs of the agent get the version current before the last promote (admin key)',
    )
    .option('--json', 'the answer as JSON')
    .action(async (agent: string, opts: { json?: boolean }, cmd: Command) => {
      const r = await ctx.clientFor(cmd).agents.rollback(agent, { signal: ctx.io.signal });
      // `--json` may land on `agents` itself (it has one too).
      if (opts.json || cmd.optsWithGlobals<{ json?: boolean }>().json) return ctx.json(r);
      ctx.out(`${r.agent}: new runs get ${r.currentVersion} (was ${r.previousVersion ?? '-'})\n`);
    });
}
