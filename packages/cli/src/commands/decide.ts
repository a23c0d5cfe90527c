import type { JsonValue } from '@baton/protocol';
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { UsageError } from '../usage-error.ts';
import { parseJson } from '../options.ts';

/** `baton decide`: approves (resumes) or denies (cancels) a tool call a run waits on. */
export function decideCommand(program: Command, ctx: CommandContext): void {
  program
    .command('decide')
    .description('approve (resume) or deny (cancel) a tool call the run waits on')
    .argument('<run>', 'run id')
    .argument('<call>', 'tool call id (see `baton runs get`)')
    .option('--approve', 'resume the call')
    .option('--deny', 'cancel the call')
    .option(
      '--payload <json>',
      "decision payload (JSON), checked against the ticket's response schema",
      parseJson,
    )
    .option('--decision-id <id>', 'makes a retried decision a no-op')
    .option('--json', 'the answer as JSON')
    .action(
      async (
        runId: string,
        callId: string,
        opts: {
          approve?: boolean;
          deny?: boolean;
          payload?: JsonValue;
          decisionId?: string;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        if (opts.approve === opts.deny)
          throw new UsageError('pass exactly one of --approve and --deny');
        if (opts.deny && opts.payload !== undefined)
          throw new UsageError('--payload goes with --approve');
        const result = await ctx.clientFor(cmd).runs.decide(
          runId,
          {
            toolCallId: callId,
            action: opts.approve ? 'resume' : 'cancel',
            ...(opts.payload === undefined ? {} : { payload: opts.payload }),
            ...(opts.decisionId === undefined ? {} : { decisionId: opts.decisionId }),
          },
          { signal: ctx.io.signal },
        );
        if (opts.json) return ctx.json(result);
        ctx.out(
          `${result.duplicates.length > 0 ? 'already decided (duplicate)' : opts.approve ? 'approved' : 'denied'}; run ${result.runId} is ${result.status}\n`,
        );
      },
    );
}
