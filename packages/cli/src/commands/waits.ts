import type { JsonValue } from '@baton/protocol';
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { parseDuration, parseJson } from '../options.ts';

/** `baton events send <name> <key>`: resumes the calls waiting for that event. */
export function eventsCommand(program: Command, ctx: CommandContext): void {
  const events = program.command('events').description('events that resume waiting runs');
  events
    .command('send')
    .description("send an event: resumes every of the tenant's calls waiting for its name and key")
    .argument('<name>', 'event name, e.g. payment.succeeded')
    .argument('<key>', 'correlation key, e.g. order-123')
    .option('--data <json>', "the event's data (JSON), given to each waiting call", parseJson)
    .option('--json', 'the answer as JSON')
    .action(
      async (
        name: string,
        key: string,
        opts: { data?: JsonValue; json?: boolean },
        cmd: Command,
      ) => {
        const result = await ctx
          .clientFor(cmd)
          .events.send(
            { name, key, ...(opts.data === undefined ? {} : { data: opts.data }) },
            { signal: ctx.io.signal },
          );
        if (opts.json) return ctx.json(result);
        ctx.out(`resumed ${String(result.resumed)} waiting call(s)\n`);
      },
    );
}

/** `baton waitpoint <create|complete>`: URLs that complete a waiting call without an API key. */
export function waitpointCommand(program: Command, ctx: CommandContext): void {
  const waitpoint = program
    .command('waitpoint')
    .description('URLs that complete a waiting call without an API key');
  waitpoint
    .command('create')
    .description('create a waitpoint URL for a suspended call (printed once: it is a secret)')
    .argument('<run>', 'run id')
    .argument('<call>', 'tool call id (see `baton runs get`)')
    .option(
      '--expires-in <duration>',
      'how long the URL works (e.g. 30m, 2h; default 24h)',
      parseDuration,
    )
    .option('--json', 'the answer as JSON')
    .action(
      async (
        runId: string,
        callId: string,
        opts: { expiresIn?: number; json?: boolean },
        cmd: Command,
      ) => {
        const client = ctx.clientFor(cmd);
        const created = await client.waitpoints.create(runId, callId, {
          signal: ctx.io.signal,
          ...(opts.expiresIn === undefined ? {} : { expiresInMs: opts.expiresIn }),
        });
        if (opts.json) return ctx.json(created);
        ctx.out(
          `${client.baseUrl}${created.url}\nexpires ${new Date(created.expiresAt).toISOString()}\n`,
        );
      },
    );
  waitpoint
    .command('complete')
    .description('complete a waitpoint (its URL or token) with a payload')
    .argument('<url>', 'the waitpoint URL or its token')
    .option('--payload <json>', "the payload (JSON), checked against the call's schema", parseJson)
    .option('--json', 'the answer as JSON')
    .action(async (url: string, opts: { payload?: JsonValue; json?: boolean }, cmd: Command) => {
      const outcome = await ctx
        .clientFor(cmd)
        .waitpoints.complete(url, opts.payload, { signal: ctx.io.signal });
      if (opts.json) return ctx.json(outcome);
      ctx.out(
        `${outcome.repeat ? 'already completed' : 'completed'}; run ${outcome.runId}, call ${outcome.toolCallId}\n`,
      );
    });
}
