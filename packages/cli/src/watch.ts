import type { RunEvent } from '@baton/protocol';
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
 * Follows a run's events (`runs watch`, `runs create --watch`), prompting for decisions in a
 * terminal; resolves with the exit code of how the run ended or stopped.
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
}
