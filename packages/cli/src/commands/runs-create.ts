import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { fairnessRunOptions, parsePriority, untilOption } from '../options.ts';
import { UsageError } from '../usage-error.ts';
import { watchRun } from '../watch.ts';

/** `baton runs create`: starts a run of an agent with one user message, optionally watching it. */
export function runsCreateCommand(runs: Command, ctx: CommandContext): void {
  runs
    .command('create')
    .description('start a run of an agent with one user message')
    .requiredOption('-a, --agent <name>', 'agent to run (see `baton agents`)')
    .requiredOption('-m, --message <text>', 'the user message')
    .option('-t, --thread <id>', 'continue this thread (conversation)')
    .option('--priority <1-5>', 'dispatch priority: 1 first, 5 last (default 3)', parsePriority)
    .option(
      '--fairness-key <key>',
      'whom the run is fair to within the tenant (default: the tenant)',
    )
    .option('--idempotency-key <key>', 'same key + same request returns the same run')
    .option('-w, --watch', 'follow the run live (and answer approvals in a terminal)')
    .option(
      '--json',
      'machine-readable output: the created run, or with --watch one JSON event per line',
    )
    .addOption(untilOption('(with --watch)'))
    .option('--no-input', 'never prompt, even in a terminal (with --watch)')
    .action(
      async (
        opts: {
          agent: string;
          message: string;
          thread?: string;
          priority?: number;
          fairnessKey?: string;
          idempotencyKey?: string;
          watch?: boolean;
          json?: boolean;
          until: 'done' | 'suspended';
          input: boolean;
        },
        cmd: Command,
      ) => {
        // Flags that only mean something while following the run: refused rather than dropped,
        // since a script that passes them expects the command to wait (and its exit code).
        if (!opts.watch) {
          const given = (['until', 'input'] as const).filter(
            (name) => cmd.getOptionValueSource(name) === 'cli',
          );
          if (given.length > 0)
            throw new UsageError(
              `${given.map((n) => (n === 'input' ? '--no-input' : `--${n}`)).join(' and ')} only work${given.length === 1 ? 's' : ''} with --watch: add --watch (or use \`baton runs watch <run>\`)`,
            );
        }
        const client = ctx.clientFor(cmd);
        const created = await client.runs.create(
          {
            agent: opts.agent,
            input: { messages: [{ role: 'user', content: opts.message }] },
            ...(opts.thread === undefined ? {} : { threadId: opts.thread }),
            ...fairnessRunOptions(opts),
          },
          {
            signal: ctx.io.signal,
            ...(opts.idempotencyKey === undefined ? {} : { idempotencyKey: opts.idempotencyKey }),
          },
        );
        if (!opts.watch) {
          if (opts.json) ctx.json(created);
          else ctx.out(`${created.runId}\n`);
          return;
        }
        ctx.exitWith(
          await watchRun(ctx, cmd, created.runId, {
            json: opts.json === true,
            until: opts.until,
            after: 0,
            input: opts.input,
          }),
        );
      },
    );
}
