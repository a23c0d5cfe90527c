import { BatonClient, BatonClientError, isApiError } from '@baton/client';
import { RunStatusSchema, type JsonValue, type RunEvent } from '@baton/protocol';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { EXIT, exitCodeForError, exitCodeForRunEnd, type ExitCode } from './exit-codes.ts';
import { promptDecisions } from './prompt.ts';
import { UsageError } from './usage-error.ts';
import {
  EventRenderer,
  colors,
  plain,
  renderAgents,
  renderRunList,
  renderSnapshot,
  type Style,
} from './render.ts';

/** Where the CLI reads and writes; tests and the bin pass the process's streams. */
export interface CliIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborted on Ctrl-C. */
  readonly signal: AbortSignal;
}

interface GlobalOptions {
  url?: string;
  apiKey?: string;
  color?: boolean;
}

function parseJson(value: string): JsonValue {
  try {
    return JSON.parse(value) as JsonValue;
  } catch {
    throw new InvalidArgumentError('not valid JSON');
  }
}

function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('not a non-negative integer');
  return n;
}

interface WatchOptions {
  readonly json: boolean;
  readonly until: 'done' | 'suspended';
  readonly after: number;
  readonly input: boolean;
}

/** Builds the `baton` program; `run()` parses argv and resolves with the exit code. */
export function createCli(io: CliIo): { run(argv: readonly string[]): Promise<ExitCode> } {
  let exitCode: ExitCode = EXIT.ok;
  const program = new Command('baton');
  program
    .description('Baton from the command line: start runs, watch them live, approve tool calls.')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
    })
    .showHelpAfterError('(run with --help for usage)')
    .option('--url <url>', 'API base URL (env BATON_URL, default http://localhost:3000)')
    .option('--api-key <key>', 'API key (env BATON_API_KEY)')
    .option('--no-color', 'plain output even in a terminal (also env NO_COLOR)')
    .addHelpText(
      'after',
      `
Exit codes:
  0 ok · 1 internal error · 2 usage · 3 unauthorized/forbidden · 4 not found
  5 refused by the API · 6 API unreachable · 10 run cancelled · 11 run failed
  12 run waiting for a decision (--until suspended) · 130 interrupted`,
    );

  const globals = (cmd: Command): GlobalOptions => cmd.optsWithGlobals<GlobalOptions>();

  const styleFor = (cmd: Command): Style =>
    io.stdout.isTTY === true && globals(cmd).color !== false && io.env['NO_COLOR'] === undefined
      ? colors
      : plain;

  const clientFor = (cmd: Command): BatonClient => {
    const g = globals(cmd);
    const apiKey = g.apiKey ?? io.env['BATON_API_KEY'];
    if (apiKey === undefined || apiKey === '')
      throw new UsageError(
        'no API key: set BATON_API_KEY or pass --api-key (npm start prints one)',
      );
    return new BatonClient({
      baseUrl: g.url ?? io.env['BATON_URL'] ?? 'http://localhost:3000',
      apiKey,
    });
  };

  const out = (text: string): void => void io.stdout.write(text);
  const json = (value: unknown): void => out(`${JSON.stringify(value)}\n`);

  const watch = async (cmd: Command, runId: string, opts: WatchOptions): Promise<ExitCode> => {
    const client = clientFor(cmd);
    const style = styleFor(cmd);
    const renderer = new EventRenderer(style);
    const interactive =
      !opts.json && opts.input && io.stdin.isTTY === true && io.stdout.isTTY === true;
    let last: RunEvent | undefined;
    const stream = client.runs.stream(runId, {
      after: opts.after,
      until: opts.until,
      signal: io.signal,
      onReconnect: (info) => {
        const why = info.error instanceof Error ? info.error.message : String(info.error);
        io.stderr.write(
          `${renderer.flush()}${style.yellow(`reconnecting in ${info.delayMs} ms (attempt ${info.attempt}, after event ${info.lastSeq}): ${why}`)}\n`,
        );
      },
    });
    for await (const event of stream) {
      last = event;
      if (opts.json) json(event);
      else out(renderer.render(event));
      if (event.type !== 'run.finished' || event.status !== 'waiting' || opts.until === 'suspended')
        continue;
      const snap = await client.runs.get(runId, { signal: io.signal });
      // Replaying history: this wait was answered already; later events show what happened.
      if (snap.status !== 'waiting' || snap.lastSeq > event.seq || !snap.await) continue;
      if (interactive) {
        out(renderer.flush());
        await promptDecisions(client, runId, snap.await.calls, io, style, io.signal);
      } else if (!opts.json) {
        for (const call of snap.await.calls)
          out(
            `${style.yellow('waiting for')} ${call.toolName} (${call.message}):\n  baton decide ${runId} ${call.toolCallId} --approve [--payload '{…}']  |  --deny\n`,
          );
      }
    }
    out(opts.json ? '' : renderer.flush());
    if (last === undefined) {
      // 204: nothing after `after`, the run is idle. Its snapshot says how it ended.
      const snap = await client.runs.get(runId, { signal: io.signal });
      if (!opts.json) out(renderSnapshot(snap, style));
      if (snap.status === 'waiting') return EXIT.runWaiting;
      return exitCodeForRunEnd(
        snap.termination
          ? ({ type: 'run.finished', status: 'done', termination: snap.termination } as RunEvent)
          : undefined,
      );
    }
    return exitCodeForRunEnd(last);
  };

  const untilOption = new Option(
    '--until <when>',
    'stop when the run is done, or also when it waits for a decision',
  )
    .choices(['done', 'suspended'])
    .default('done');

  const runs = program.command('runs').description('create, list, inspect, watch and cancel runs');

  runs
    .command('create')
    .description('start a run of an agent with one user message')
    .requiredOption('-a, --agent <name>', 'agent to run (see `baton agents`)')
    .requiredOption('-m, --message <text>', 'the user message')
    .option('-t, --thread <id>', 'continue this thread (conversation)')
    .option('--idempotency-key <key>', 'same key + same request returns the same run')
    .option('-w, --watch', 'follow the run live (and answer approvals in a terminal)')
    .option('--json', 'machine-readable output (with --watch: one JSON event per line)')
    .addOption(untilOption)
    .option('--no-input', 'never prompt, even in a terminal')
    .action(
      async (
        opts: {
          agent: string;
          message: string;
          thread?: string;
          idempotencyKey?: string;
          watch?: boolean;
          json?: boolean;
          until: 'done' | 'suspended';
          input: boolean;
        },
        cmd: Command,
      ) => {
        const client = clientFor(cmd);
        const created = await client.runs.create(
          {
            agent: opts.agent,
            input: { messages: [{ role: 'user', content: opts.message }] },
            ...(opts.thread === undefined ? {} : { threadId: opts.thread }),
          },
          {
            signal: io.signal,
            ...(opts.idempotencyKey === undefined ? {} : { idempotencyKey: opts.idempotencyKey }),
          },
        );
        if (!opts.watch) {
          if (opts.json) json(created);
          else out(`${created.runId}\n`);
          return;
        }
        exitCode = await watch(cmd, created.runId, {
          json: opts.json === true,
          until: opts.until,
          after: 0,
          input: opts.input,
        });
      },
    );

  runs
    .command('watch')
    .description('follow a run live; survives API restarts (reconnects with Last-Event-ID)')
    .argument('<run>', 'run id')
    .option('--json', 'one JSON event per line')
    .option('--after <seq>', 'start after this event sequence number', parseCount, 0)
    .addOption(untilOption)
    .option('--no-input', 'never prompt, even in a terminal')
    .action(
      async (
        runId: string,
        opts: { json?: boolean; after: number; until: 'done' | 'suspended'; input: boolean },
        cmd: Command,
      ) => {
        exitCode = await watch(cmd, runId, {
          json: opts.json === true,
          until: opts.until,
          after: opts.after,
          input: opts.input,
        });
      },
    );

  runs
    .command('list')
    .description("the tenant's runs, newest first")
    .addOption(
      new Option('--status <status>', 'only runs with this status').choices(
        RunStatusSchema.options,
      ),
    )
    .option('--agent <name>', 'only runs of this agent')
    .option('--thread <id>', 'only runs of this thread')
    .option('--limit <n>', 'page size (1-100)', parseCount)
    .option('--cursor <cursor>', 'the next page (printed after a full page)')
    .option('--json', 'the page as JSON')
    .action(
      async (
        opts: {
          status?: 'created' | 'running' | 'waiting' | 'done';
          agent?: string;
          thread?: string;
          limit?: number;
          cursor?: string;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const page = await clientFor(cmd).runs.list(
          {
            ...(opts.status ? { status: opts.status } : {}),
            ...(opts.agent ? { agent: opts.agent } : {}),
            ...(opts.thread ? { thread: opts.thread } : {}),
            ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
            ...(opts.cursor ? { cursor: opts.cursor } : {}),
          },
          { signal: io.signal },
        );
        if (opts.json) return json(page);
        out(renderRunList(page.runs, styleFor(cmd)));
        if (page.nextCursor)
          out(styleFor(cmd).dim(`more: baton runs list --cursor ${page.nextCursor}\n`));
      },
    );

  runs
    .command('get')
    .description("a run's snapshot: status, waiting calls, tool calls, usage")
    .argument('<run>', 'run id')
    .option('--json', 'the snapshot as JSON')
    .action(async (runId: string, opts: { json?: boolean }, cmd: Command) => {
      const snap = await clientFor(cmd).runs.get(runId, { signal: io.signal });
      if (opts.json) json(snap);
      else out(renderSnapshot(snap, styleFor(cmd)));
    });

  runs
    .command('cancel')
    .description('cancel a run (idempotent)')
    .argument('<run>', 'run id')
    .option('--json', 'the answer as JSON')
    .action(async (runId: string, opts: { json?: boolean }, cmd: Command) => {
      const result = await clientFor(cmd).runs.cancel(runId, { signal: io.signal });
      if (opts.json) json(result);
      else out(`cancel requested; run ${result.runId} is ${result.status}\n`);
    });

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
        const result = await clientFor(cmd).runs.decide(
          runId,
          {
            toolCallId: callId,
            action: opts.approve ? 'resume' : 'cancel',
            ...(opts.payload === undefined ? {} : { payload: opts.payload }),
            ...(opts.decisionId === undefined ? {} : { decisionId: opts.decisionId }),
          },
          { signal: io.signal },
        );
        if (opts.json) return json(result);
        out(
          `${result.duplicates.length > 0 ? 'already decided (duplicate)' : opts.approve ? 'approved' : 'denied'}; run ${result.runId} is ${result.status}\n`,
        );
      },
    );

  program
    .command('agents')
    .description('agents the workers advertise')
    .option('--json', 'the list as JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const agents = await clientFor(cmd).agents.list({ signal: io.signal });
      if (opts.json) return json({ agents });
      out(renderAgents(agents, styleFor(cmd)));
    });

  return {
    async run(argv) {
      try {
        await program.parseAsync([...argv], { from: 'user' });
        return exitCode;
      } catch (error) {
        if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
        if (error instanceof UsageError) {
          io.stderr.write(`baton: ${error.message}\n`);
          return EXIT.usage;
        }
        if (io.signal.aborted) return EXIT.interrupted;
        const code = exitCodeForError(error);
        const label = isApiError(error)
          ? `${error.code} (${error.status})`
          : error instanceof BatonClientError
            ? error.code
            : 'error';
        io.stderr.write(
          `baton: ${label}: ${error instanceof Error ? error.message : String(error)}\n`,
        );
        return code;
      }
    },
  };
}
