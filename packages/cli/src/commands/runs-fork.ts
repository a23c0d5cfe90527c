import type { Command } from 'commander';
import type { BulkReplayStatus, ForkRunResponse } from '@baton/protocol';
import type { CommandContext } from '../context.ts';
import { UsageError } from '../usage-error.ts';

function printed(r: ForkRunResponse): string {
  const what = r.origin.kind === 'fork' ? 'forked' : 'replayed';
  return `${what} run ${r.origin.runId} after seq ${String(r.origin.atSeq)}: new run ${r.runId} (thread ${r.threadId}) is ${r.status}\n`;
}

/** `baton runs fork` and `baton runs replay`: a new run from another's state. */
export function runsForkCommands(runs: Command, ctx: CommandContext): void {
  runs
    .command('fork')
    .description("start a new run from a run's state after one of its events (a new thread branch)")
    .argument('<run>', 'run id')
    .requiredOption('--at <seq>', 'the event (seq) the fork starts after')
    .option(
      '-m, --message <text>',
      'a user message to continue with (at a step boundary or after the end)',
    )
    .option(
      '--agent-version <version>',
      'the agent version to continue on (default: the current one)',
    )
    .option('--json', 'the answer as JSON')
    .action(
      async (
        runId: string,
        opts: { at: string; message?: string; agentVersion?: string; json?: boolean },
        cmd: Command,
      ) => {
        const atSeq = Number(opts.at);
        if (!Number.isInteger(atSeq) || atSeq < 1)
          throw new UsageError(`--at must be a positive integer (an event's seq), got ${opts.at}`);
        const result = await ctx.clientFor(cmd).runs.fork(
          runId,
          {
            atSeq,
            ...(opts.message === undefined
              ? {}
              : { input: { messages: [{ role: 'user', content: opts.message }] } }),
            ...(opts.agentVersion === undefined ? {} : { agentVersion: opts.agentVersion }),
          },
          { signal: ctx.io.signal },
        );
        if (opts.json) ctx.json(result);
        else ctx.out(printed(result));
      },
    );
  runs
    .command('replay')
    .description('run a failed or cancelled run again, as a new run from its last committed step')
    .argument('<run>', 'run id')
    .option('--json', 'the answer as JSON')
    .action(async (runId: string, opts: { json?: boolean }, cmd: Command) => {
      const result = await ctx.clientFor(cmd).runs.replay(runId, { signal: ctx.io.signal });
      if (opts.json) ctx.json(result);
      else ctx.out(printed(result));
    });
  runs
    .command('replay-many')
    .description('replay the failed or cancelled runs a filter selects (a bulk operation)')
    .option('--agent <name>', "only this agent's runs")
    .option('--status <list>', 'failed, cancelled or both (comma-separated)', 'failed,cancelled')
    .option('--created-after <ms>', 'created at or after (epoch ms)')
    .option('--created-before <ms>', 'created at or before (epoch ms)')
    .option('--agent-version <version>', 'only runs of this agent version')
    .option('--limit <n>', 'at most this many runs (newest first)')
    .option('--wait', 'wait until every selected run was handled')
    .option('--json', 'the answer as JSON')
    .action(
      async (
        opts: {
          agent?: string;
          status: string;
          createdAfter?: string;
          createdBefore?: string;
          agentVersion?: string;
          limit?: string;
          wait?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const num = (v: string | undefined, what: string): number | undefined => {
          if (v === undefined) return undefined;
          const n = Number(v);
          if (!Number.isInteger(n) || n < 0)
            throw new UsageError(`${what} must be a whole number, got ${v}`);
          return n;
        };
        const status = opts.status.split(',').map((s) => s.trim());
        for (const s of status)
          if (s !== 'failed' && s !== 'cancelled')
            throw new UsageError(`--status takes failed and/or cancelled, got ${s}`);
        const client = ctx.clientFor(cmd);
        const after = num(opts.createdAfter, '--created-after');
        const before = num(opts.createdBefore, '--created-before');
        const limit = num(opts.limit, '--limit');
        let progress: BulkReplayStatus = await client.runs.replayMany(
          {
            status: status as ('failed' | 'cancelled')[],
            ...(opts.agent === undefined ? {} : { agent: opts.agent }),
            ...(after === undefined ? {} : { createdAfter: after }),
            ...(before === undefined ? {} : { createdBefore: before }),
            ...(opts.agentVersion === undefined ? {} : { agentVersion: opts.agentVersion }),
            ...(limit === undefined ? {} : { limit }),
          },
          { signal: ctx.io.signal },
        );
        while (opts.wait && progress.state !== 'done') {
          await new Promise((r) => setTimeout(r, 500));
          progress = await client.runs.bulkReplay(progress.replayId, { signal: ctx.io.signal });
        }
        if (opts.json) ctx.json(progress);
        else
          ctx.out(
            `bulk replay ${progress.replayId} ${progress.state}: ${String(progress.processed)} of ${String(progress.total)} handled, ${String(progress.replayed)} replayed, ${String(progress.skipped)} skipped, ${String(progress.failed)} failed\n`,
          );
      },
    );
}
