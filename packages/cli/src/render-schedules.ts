import type { Schedule, ScheduleDetail } from '@baton/protocol';
import { when, type Style } from './render.ts';

/** When a schedule fires: its cron expression and zone, or its interval. */
export function cadence(s: Pick<Schedule, 'cron' | 'timezone' | 'everyMs'>): string {
  if (s.cron !== undefined) return `cron "${s.cron}" ${s.timezone ?? 'UTC'}`;
  return s.everyMs !== undefined ? `every ${String(s.everyMs)} ms` : '-';
}

function stateText(state: Schedule['state'], s: Style): string {
  const padded = state.padEnd(9);
  return state === 'active'
    ? s.green(padded)
    : state === 'paused'
      ? s.yellow(padded)
      : s.dim(padded);
}

/** `schedules list`: one line per schedule. */
export function renderScheduleList(schedules: readonly Schedule[], s: Style): string {
  if (schedules.length === 0) return s.dim('no schedules') + '\n';
  return (
    schedules
      .map(
        (x) =>
          `${x.scheduleId}  ${stateText(x.state, s)}  ${x.agent.padEnd(20)}  ${cadence(x)}  next ${when(x.nextFireAt)}${x.name ? `  ${s.dim(x.name)}` : ''}`,
      )
      .join('\n') + '\n'
  );
}

/** `schedules get` (and the answer of create, pause, resume): the schedule and its firings. */
export function renderSchedule(x: Schedule | ScheduleDetail, s: Style): string {
  const lines = [
    `${s.bold(x.scheduleId)}  ${stateText(x.state, s).trimEnd()}${x.completedReason ? ` (${x.completedReason})` : ''}  agent ${x.agent}${x.name ? `  ${s.dim(x.name)}` : ''}`,
    `${cadence(x)}, next ${when(x.nextFireAt)}, ${String(x.firings)} firing(s)${x.limit !== undefined ? ` of ${String(x.limit)}` : ''}${x.threadId !== undefined ? `, thread ${x.threadId}` : ''}`,
  ];
  const message = x.input.messages.at(-1)?.content;
  if (message !== undefined)
    lines.push(`message: ${typeof message === 'string' ? message : JSON.stringify(message)}`);
  for (const f of 'recentFirings' in x ? x.recentFirings : [])
    lines.push(
      `  ${when(f.firedAt)}  ${f.outcome.padEnd(8)}  ${f.runId ?? ''}${f.error ? s.red(`${f.error.code}: ${f.error.message}`) : ''}`,
    );
  return lines.join('\n') + '\n';
}
