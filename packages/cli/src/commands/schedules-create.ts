import type { CreateScheduleRequest } from '@baton/protocol';
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { fairnessRunOptions, parseCount, parseDuration, parsePriority } from '../options.ts';
import { renderSchedule } from '../render-schedules.ts';
import { UsageError } from '../usage-error.ts';

/** An instant as the API takes it: epoch milliseconds, or an ISO 8601 string with an offset. */
function instant(value: string): number | string {
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** `baton schedules create`: a schedule that runs an agent with one user message. */
export function schedulesCreateCommand(schedules: Command, ctx: CommandContext): void {
  schedules
    .command('create')
    .description('create a schedule that runs an agent with one user message')
    .requiredOption('-a, --agent <name>', 'agent to run (see `baton agents`)')
    .requiredOption('-m, --message <text>', 'the user message of every run')
    .option('--cron <expr>', 'cron expression: 5 fields, or 6 with seconds first')
    .option('--timezone <zone>', 'IANA time zone of --cron (default UTC)')
    .option(
      '--every <duration>',
      'fixed interval instead of --cron: 30s, 5m, 1h, 1d',
      parseDuration,
    )
    .option('--name <name>', 'a label for people')
    .option('-t, --thread <id>', 'run every firing on this thread')
    .option('--limit <n>', 'at most this many firings', parseCount)
    .option('--start-at <instant>', 'no firing before (ISO 8601 with offset, or epoch ms)')
    .option('--end-at <instant>', 'no firing after (ISO 8601 with offset, or epoch ms)')
    .option(
      '--priority <1-5>',
      "its runs' dispatch priority: 1 first, 5 last (default 3)",
      parsePriority,
    )
    .option(
      '--fairness-key <key>',
      'whom its runs are fair to within the tenant (default: the tenant)',
    )
    .option('--idempotency-key <key>', 'same key + same request returns the same schedule')
    .option('--json', 'the schedule as JSON')
    .action(
      async (
        opts: {
          agent: string;
          message: string;
          cron?: string;
          timezone?: string;
          every?: number;
          name?: string;
          thread?: string;
          limit?: number;
          priority?: number;
          fairnessKey?: string;
          startAt?: string;
          endAt?: string;
          idempotencyKey?: string;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        if ((opts.cron === undefined) === (opts.every === undefined))
          throw new UsageError('pass exactly one of --cron and --every');
        if (opts.timezone !== undefined && opts.cron === undefined)
          throw new UsageError('--timezone goes with --cron');
        const request: CreateScheduleRequest = {
          agent: opts.agent,
          input: { messages: [{ role: 'user', content: opts.message }] },
          ...(opts.cron !== undefined ? { cron: opts.cron } : {}),
          ...(opts.timezone !== undefined ? { timezone: opts.timezone } : {}),
          ...(opts.every !== undefined ? { everyMs: opts.every } : {}),
          ...(opts.name !== undefined ? { name: opts.name } : {}),
          ...(opts.thread !== undefined ? { threadId: opts.thread } : {}),
          ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
          ...(opts.startAt !== undefined ? { startAt: instant(opts.startAt) } : {}),
          ...(opts.endAt !== undefined ? { endAt: instant(opts.endAt) } : {}),
          ...fairnessRunOptions(opts),
        };
        const created = await ctx.clientFor(cmd).schedules.create(request, {
          signal: ctx.io.signal,
          ...(opts.idempotencyKey !== undefined ? { idempotencyKey: opts.idempotencyKey } : {}),
        });
        if (opts.json) ctx.json(created);
        else ctx.out(renderSchedule(created, ctx.styleFor(cmd)));
      },
    );
}
