import { RunStatusSchema } from '@baton/protocol';
import { Option, type Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { parseCount } from '../options.ts';
import { parentRunIdOf, renderRunList } from '../render.ts';

/** `baton runs list`: the tenant's runs, newest first, a page at a time. */
export function runsListCommand(runs: Command, ctx: CommandContext): void {
  runs
    .command('list')
    .description("the tenant's runs, newest first; child runs indented under their parent")
    .addOption(
      new Option('--status <status>', 'only runs with this status').choices(
        RunStatusSchema.options,
      ),
    )
    .option('--agent <name>', 'only runs of this agent')
    .option('--thread <id>', 'only runs of this thread')
    .option(
      '--fairness-key <key>',
      'only runs of this fairness key (a run without one: its tenant)',
    )
    .option('--agent-version <version>', 'only runs created on this agent version')
    .option('--queued', 'only runs waiting for a slot of their tenant or fairness key')
    .option('--limit <n>', 'page size (1-100)', parseCount)
    .option('--cursor <cursor>', 'the next page (printed after a full page)')
    .option('--roots', 'only runs started by a client or schedule, not child runs of agent tools')
    .option('--json', 'the page as JSON')
    .action(
      async (
        opts: {
          status?: 'created' | 'running' | 'waiting' | 'done';
          agent?: string;
          thread?: string;
          fairnessKey?: string;
          agentVersion?: string;
          queued?: boolean;
          limit?: number;
          cursor?: string;
          roots?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const page = await ctx.clientFor(cmd).runs.list(
          {
            ...(opts.status ? { status: opts.status } : {}),
            ...(opts.agent ? { agent: opts.agent } : {}),
            ...(opts.thread ? { thread: opts.thread } : {}),
            ...(opts.fairnessKey ? { fairnessKey: opts.fairnessKey } : {}),
            ...(opts.agentVersion ? { agentVersion: opts.agentVersion } : {}),
            ...(opts.queued ? { admission: 'queued' as const } : {}),
            ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
            ...(opts.cursor ? { cursor: opts.cursor } : {}),
          },
          { signal: ctx.io.signal },
        );
        // Filtered here (the API lists every run): a page may then hold fewer than --limit runs.
        const runs = opts.roots
          ? page.runs.filter((r) => parentRunIdOf(r.runId) === null)
          : page.runs;
        if (opts.json) return ctx.json({ ...page, runs });
        ctx.out(renderRunList(runs, ctx.styleFor(cmd)));
        if (page.nextCursor)
          ctx.out(ctx.styleFor(cmd).dim(`more: baton runs list --cursor ${page.nextCursor}\n`));
      },
    );
}
