import type { AwaitedToolCall, RunEvent } from '@baton/protocol';
import type { Command } from 'commander';
import type { CommandContext } from './context.ts';
import { EXIT, exitCodeForRunEnd, type ExitCode } from './exit-codes.ts';
import { promptDecisions } from './prompt.ts';
import { EventRenderer, renderSnapshot } from './render.ts';

export interface WatchOptions {
  readonly json: boolean;
  readonly until: 'done' | 'suspended';
  readonly after: number;
  readonly input: boolean;
}

/**
 * Follows a run's tree of events (`runs watch`, `runs create --watch`): the run's own and every
 * descendant's its agent tools start, since a child run's approval is what the whole tree waits
 * for. In a terminal it prompts for a decision whichever run of the tree waits, and sends it
 * through the watched run (the API routes it to the run that holds the call); resolves with the
 * exit code of how the watched run ended or stopped.
 */
export async function watchRun(
  ctx: CommandContext,
  cmd: Command,
  runId: string,
  opts: WatchOptions,
): Promise<ExitCode> {
  const { io, out, json } = ctx;
  const client = ctx.clientFor(cmd);
  const style = ctx.styleFor(cmd);
  // One renderer per run: a child's streamed text must not continue its parent's line.
  const renderers = new Map<string, EventRenderer>();
  const rendererFor = (id: string): EventRenderer => {
    let renderer = renderers.get(id);
    if (!renderer) renderers.set(id, (renderer = new EventRenderer(style)));
    return renderer;
  };
  const flush = (): string => [...renderers.values()].map((r) => r.flush()).join('');
  const interactive =
    !opts.json && opts.input && io.stdin.isTTY === true && io.stdout.isTTY === true;
  let last: RunEvent | undefined;
  // The tree stream follows the tree to its end; `--until suspended` is decided here, on the
  // first wait of any run of the tree (the API refuses until=suspended with children=1).
  const stream = client.runs.stream(runId, {
    after: opts.after,
    children: true,
    signal: io.signal,
    onReconnect: (info) => {
      const why = info.error instanceof Error ? info.error.message : String(info.error);
      io.stderr.write(
        `${flush()}${style.yellow(`reconnecting in ${info.delayMs} ms (attempt ${info.attempt}, after event ${info.lastSeq}): ${why}`)}\n`,
      );
    },
  });
  for await (const event of stream) {
    const own = event.runId === runId;
    if (own) last = event;
    if (opts.json) json(event);
    else {
      const text = rendererFor(event.runId).render(event);
      // A descendant's lines say whose they are: the child's id after the watched run's.
      const tag = own ? '' : style.dim(`[${event.runId.slice(runId.length + 1)}] `);
      // (after the newline that ends the run's pending text, if any; a delta that continues a
      // line has no tag)
      const nl = text.startsWith('\n') ? '\n' : '';
      const continues = event.type === 'text.delta' && !text.startsWith(style.cyan('assistant'));
      out(tag === '' || text === '' || continues ? text : nl + tag + text.slice(nl.length));
    }
    if (event.type !== 'run.finished' || event.status !== 'waiting') continue;
    const snap = await client.runs.get(event.runId, { signal: io.signal });
    // Replaying history: this wait was answered already; later events show what happened.
    if (snap.status !== 'waiting' || snap.lastSeq > event.seq || !snap.await) continue;
    // The run's own calls (its descendants' come with their own waits).
    const calls: AwaitedToolCall[] = snap.await.calls
      .filter((c) => c.runId === undefined || c.runId === event.runId)
      .map((c) => (own ? c : { ...c, runId: event.runId }));
    if (calls.length === 0) continue;
    if (opts.until === 'suspended') {
      if (!own) last = event;
      break;
    }
    if (interactive) {
      out(flush());
      await promptDecisions(client, runId, calls, io, style, io.signal);
    } else if (!opts.json) {
      for (const call of calls)
        out(
          `${style.yellow('waiting for')} ${call.toolName} (${call.message}):\n  baton decide ${call.runId ?? runId} ${call.toolCallId} --approve [--payload '{…}']  |  --deny\n`,
        );
    }
  }
  out(opts.json ? '' : flush());
  if (last?.type === 'run.finished' && last.status === 'waiting') return EXIT.runWaiting;
  if (last === undefined) {
    // Nothing after `after`: the run is idle. Its snapshot says how it ended.
    const snap = await client.runs.get(runId, { signal: io.signal });
    if (!opts.json) out(renderSnapshot(snap, style));
    if (snap.status === 'waiting' || snap.await) return EXIT.runWaiting;
    return exitCodeForRunEnd(
      snap.termination
        ? ({ type: 'run.finished', status: 'done', termination: snap.termination } as RunEvent)
        : undefined,
    );
  }
  return exitCodeForRunEnd(last);
}
