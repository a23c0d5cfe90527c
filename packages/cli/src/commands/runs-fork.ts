import type { Command } from 'commander';
import type { ForkRunResponse } from '@baton/protocol';
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
}
