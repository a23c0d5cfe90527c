import type {
  AgentDescriptor,
  AwaitedToolCall,
  QueuedInfo,
  RunEvent,
  RunSummary,
  RunView,
} from '@baton/protocol';
import { isSleepTicket } from '@baton/protocol';

export interface Style {
  readonly dim: (s: string) => string;
  readonly bold: (s: string) => string;
  readonly green: (s: string) => string;
  readonly red: (s: string) => string;
  readonly yellow: (s: string) => string;
  readonly cyan: (s: string) => string;
}

const ansi =
  (open: number, close: number) =>
  (s: string): string =>
    `\x1b[${open}m${s}\x1b[${close}m`;

export const colors: Style = {
  dim: ansi(2, 22),
  bold: ansi(1, 22),
  green: ansi(32, 39),
  red: ansi(31, 39),
  yellow: ansi(33, 39),
  cyan: ansi(36, 39),
};
const id = (s: string): string => s;
export const plain: Style = { dim: id, bold: id, green: id, red: id, yellow: id, cyan: id };

/** An instant for a terminal: ISO 8601 (UTC), '-' when there is none. */
export function when(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : new Date(ms).toISOString();
}

function short(value: unknown, max = 80): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * Turns a run's events into terminal text: assistant text streams inline as it arrives, every
 * other event is one line. Stateful because a delta continues the current line.
 */
export class EventRenderer {
  private readonly style: Style;
  private inText = false;

  constructor(style: Style) {
    this.style = style;
  }

  /** Text to write for `event` ('' for events a person does not need to see). */
  render(event: RunEvent): string {
    const s = this.style;
    if (event.type === 'text.delta') {
      const prefix = this.inText ? '' : `${s.cyan('assistant')} `;
      this.inText = true;
      return prefix + event.delta;
    }
    const line = this.line(event);
    if (line === '') return '';
    const out = (this.inText ? '\n' : '') + line + '\n';
    this.inText = false;
    return out;
  }

  /** Ends a pending text line (before a prompt or at exit). */
  flush(): string {
    if (!this.inText) return '';
    this.inText = false;
    return '\n';
  }

  private line(event: RunEvent): string {
    const s = this.style;
    switch (event.type) {
      case 'run.created':
        return s.dim(`run ${event.runId} created (agent ${event.agent}, ${event.executionMode})`);
      case 'run.started':
        return s.dim(`run started on a worker`);
      case 'run.status':
        return s.dim(`status ${event.from} → ${event.to}`);
      case 'message.input':
        return `${s.bold('user')} ${typeof event.message.content === 'string' ? event.message.content : short(event.message.content)}`;
      case 'step.started':
        return s.dim(`— step ${event.step}`);
      case 'inference.reset':
        return s.yellow('(the partial answer above was discarded; the model starts again)');
      case 'tool_call.created':
        return `${s.bold('tool')} ${event.toolName} ${s.dim(short(event.arguments))} ${s.dim(`[${event.toolCallId}]`)}`;
      case 'tool_call.status': {
        const color =
          event.to === 'succeeded'
            ? s.green
            : event.to === 'failed'
              ? s.red
              : event.to === 'suspended'
                ? s.yellow
                : s.dim;
        return `  ${event.toolName} ${s.dim(event.from)} → ${color(event.to)}`;
      }
      case 'tool_call.suspended': {
        const d = event.ticket.deadline;
        const until = d?.at === undefined ? '' : new Date(d.at).toISOString();
        if (isSleepTicket(event.ticket))
          return `${s.yellow('⏾ sleeping')} ${event.toolName} until ${until}`;
        const deadline =
          d?.at === undefined ? '' : s.dim(` deadline ${until} → ${d.outcome.action}`);
        return `${s.yellow('⏸ needs a decision')} ${event.toolName}: ${event.ticket.message} ${s.dim(`(${event.ticket.reason})`)}${deadline}`;
      }
      case 'tool_call.deadline_expired':
        return s.yellow(
          `⏱ deadline of ${event.toolName} passed (${new Date(event.deadlineAt).toISOString()}): ${event.outcome.action}`,
        );
      case 'tool_call.deadline_escalated':
        return s.yellow(
          `⏱ ${event.toolName} escalated; deadline extended to ${new Date(event.deadlineAt).toISOString()}`,
        );
      case 'tool_call.result': {
        const o = event.outcome;
        const detail =
          o.status === 'succeeded'
            ? s.dim(short(o.output, 100))
            : o.status === 'failed'
              ? s.red(o.error ?? 'failed')
              : s.yellow('cancelled');
        return `  ${event.toolName} ${o.status}: ${detail}`;
      }
      case 'decision.applied':
        return `${s.bold(event.decision.source === 'deadline' ? 'deadline decision' : 'decision')} ${event.decision.action} ${s.dim(event.decision.toolCallId)}`;
      case 'decision.discarded':
        return s.yellow(
          `decision ${event.decision.decisionId} not applied: ${event.reason} ${s.dim(event.decision.toolCallId)}`,
        );
      case 'child_run.linked':
        return `  ${event.link.toolName} ${s.dim(`runs as child run ${event.link.childRunId}${agentUnlessTool(event.link.childAgentId, event.link.toolName)}`)}`;
      case 'child_run.finished':
        return `  ${s.dim(`child run ${event.child.runId} ended: ${event.child.termination.kind}`)}`;
      case 'run.cancel_requested':
        return s.yellow('cancel requested; the run stops at its next step boundary');
      case 'model.retry':
        return s.yellow(
          `model call failed (${event.reason}); retry ${event.attempt} in ${Math.round(event.delayMs)} ms`,
        );
      case 'run.finished': {
        if (event.status === 'waiting') return s.yellow('run is waiting for a decision');
        const kind = event.termination.kind;
        const ok = kind === 'natural_end' || kind === 'stopped' || kind === 'behavior_requested';
        const why =
          event.termination.kind === 'error'
            ? `: ${event.termination.message}`
            : event.termination.kind === 'blocked'
              ? `: ${event.termination.reason}`
              : '';
        return (ok ? s.green : s.red)(
          `run finished: ${kind}${why} (${event.usage.totalTokens} tokens)`,
        );
      }
      case 'text.delta':
      case 'message.assistant':
      case 'reasoning.delta':
      case 'phase':
      case 'state.delta':
      case 'state.conflict':
      case 'step.finished':
        return '';
    }
  }
}

/** `runs get`: a run snapshot for people, with its place in its run tree. */
export function renderSnapshot(snap: RunView, s: Style): string {
  const lines = [
    `${s.bold(snap.runId)}  ${statusText(snap.status, s)}  agent ${snap.agent}${snap.agentVersion === undefined ? '' : `@${snap.agentVersion}`}  thread ${snap.threadId}`,
    `step ${snap.step}, phase ${snap.phase ?? '-'}, ${snap.usage.totalTokens} tokens${endedText(snap)}`,
  ];
  if (snap.parent)
    lines.push(
      `child of ${snap.parent.runId} ${s.dim(`(${snap.parent.agent}, call ${snap.parent.toolName} ${snap.parent.toolCallId})`)}`,
    );
  if (snap.priority !== undefined)
    lines.push(`priority ${snap.priority}, fairness key ${snap.fairnessKey ?? '-'}`);
  if (snap.queued && snap.status !== 'done') lines.push(s.yellow(queuedText(snap.queued)));
  if (snap.scheduleId !== undefined) lines.push(`created by schedule ${snap.scheduleId}`);
  for (const child of snap.childRuns ?? [])
    lines.push(
      `  child ${child.childRunId} ${statusText(child.status ?? 'not started', s)} ${s.dim(child.childAgentId === child.toolName ? `agent ${child.childAgentId}` : `agent ${child.childAgentId} for ${child.toolName}`)}`,
    );
  if (snap.lastAssistantMessage) lines.push(`assistant: ${snap.lastAssistantMessage}`);
  for (const call of snap.toolCalls)
    lines.push(`  ${call.toolName} ${s.dim(call.toolCallId)} ${call.status}`);
  for (const call of snap.await?.calls ?? [])
    lines.push(
      `${s.yellow('waiting:')} ${call.toolName} ${s.dim(call.toolCallId)}${call.runId !== undefined ? s.dim(` in child run ${call.runId}`) : ''} ${call.message}${waitForText(call.waitFor)}\n  baton decide ${call.runId ?? snap.runId} ${call.toolCallId} --approve | --deny`,
    );
  return lines.join('\n') + '\n';
}

/** What else completes a waiting call (an event, a waitpoint URL), and until when. */
function waitForText(waitFor: AwaitedToolCall['waitFor']): string {
  if (!waitFor) return '';
  const until =
    waitFor.expiresAt === undefined ? '' : `, until ${new Date(waitFor.expiresAt).toISOString()}`;
  return waitFor.kind === 'event'
    ? ` (event ${waitFor.name} for ${waitFor.key}${until})`
    : ` (waitpoint${until})`;
}

/**
 * An agent tool is usually named after its agent (`agentTool('counter')` is the tool `counter`):
 * the tree line names the agent only when it differs.
 */
function agentUnlessTool(agent: string, tool: string): string {
  return agent === tool ? '' : ` (agent ${agent})`;
}

/**
 * How the run stands once it stopped moving: a waiting run has not ended (its termination reads
 * `suspended` until a decision resumes it), it waits on the calls listed below.
 */
function endedText(snap: RunView): string {
  if (snap.status === 'waiting' || snap.termination?.kind === 'suspended') {
    const n = snap.await?.calls.length ?? 0;
    return n === 0 ? ', waiting' : `, waiting for ${n === 1 ? 'a decision' : `${n} decisions`}`;
  }
  return snap.termination ? `, ended: ${snap.termination.kind}` : '';
}

/** A run waiting for a slot of its tenant or fairness key (docs/fairness.md). */
function queuedText(q: QueuedInfo): string {
  if (q.reason === 'version_unavailable')
    return `queued: no live worker serves its agent version (version unavailable; ${q.backlog} run(s) wait for it); it resumes when one starts`;
  const limit = q.limit === undefined ? '' : ` of ${q.limit}`;
  return `queued: position ${q.position} of ${q.backlog} waiting for a slot (${q.reason.replaceAll('_', ' ')}; ${q.inProgress}${limit} of its key in progress)`;
}

/** `P3 alice`, and `queued 1/2` while it waits for a slot; '' from a server before lists showed them. */
function admissionText(r: RunSummary, s: Style): string {
  if (r.priority === undefined) return '';
  const queued = r.queued ? `  ${s.yellow(`queued ${r.queued.position}/${r.queued.backlog}`)}` : '';
  return `  P${r.priority} ${r.fairnessKey ?? ''}${queued}`;
}

function statusText(status: string, s: Style): string {
  return status === 'done'
    ? s.green(status)
    : status === 'waiting'
      ? s.yellow(status)
      : s.cyan(status);
}

/** A child run's parent, read from its id (`<parent>.s<step>c<index>[a<attempt>]`); null for a root. */
export function parentRunIdOf(runId: string): string | null {
  return /^(.+)\.s\d+c\d+(?:a\d+)?$/.exec(runId)?.[1] ?? null;
}

/**
 * `runs list`: one line per run, child runs (agent tools) indented under their parent when the
 * page holds it; a child whose parent is not on the page says whose it is.
 */
export function renderRunList(runs: readonly RunSummary[], s: Style): string {
  if (runs.length === 0) return s.dim('no runs') + '\n';
  const onPage = new Set(runs.map((r) => r.runId));
  const children = new Map<string, RunSummary[]>();
  for (const r of runs) {
    const parent = parentRunIdOf(r.runId);
    if (parent !== null && onPage.has(parent))
      children.set(parent, [...(children.get(parent) ?? []), r]);
  }
  const lines: string[] = [];
  const add = (r: RunSummary, depth: number): void => {
    const parent = parentRunIdOf(r.runId);
    const orphan = parent !== null && !onPage.has(parent) ? s.dim(`  child of ${parent}`) : '';
    const indent = depth === 0 ? '' : `${'  '.repeat(depth - 1)}└ `;
    lines.push(
      `${indent}${r.runId}  ${statusText(r.status.padEnd(7), s)}  ${(r.agentVersion === undefined ? r.agent : `${r.agent}@${r.agentVersion}`).padEnd(20)}  ${new Date(r.updatedAt).toISOString()}  ${s.dim(r.threadId)}${admissionText(r, s)}${orphan}`,
    );
    // Children in call order (their ids sort by step and position), under their parent.
    const kids = [...(children.get(r.runId) ?? [])].sort((a, b) =>
      a.runId.localeCompare(b.runId, 'en', { numeric: true }),
    );
    for (const child of kids) add(child, depth + 1);
  };
  for (const r of runs) {
    const parent = parentRunIdOf(r.runId);
    if (parent === null || !onPage.has(parent)) add(r, 0);
  }
  return lines.join('\n') + '\n';
}

/** `agents`: one block per advertised agent. */
/** Each version: current or not, live workers, runs in progress / waiting (drained: none left). */
function versionsText(a: AgentDescriptor, s: Style): string {
  return (a.versions ?? [])
    .map((v) => {
      const mark = v.current ? s.green('current') : v.runs.inProgress === 0 ? s.dim('drained') : '';
      return `  version ${v.version}  ${mark}  workers ${v.workers.length}  runs ${v.runs.inProgress} in progress, ${v.runs.waiting} waiting${v.runs.versionUnavailable > 0 ? s.yellow(` (${v.runs.versionUnavailable} for a worker)`) : ''}\n`;
    })
    .join('');
}

export function renderAgents(agents: readonly AgentDescriptor[], s: Style): string {
  if (agents.length === 0) return s.dim('no agents advertised (is a worker running?)') + '\n';
  return agents
    .map((a) => {
      const tools = a.tools
        .map((t) => `${t.name}${t.approval ? ' (approval)' : t.clientSide ? ' (client)' : ''}`)
        .join(', ');
      return `${s.bold(a.name)}  ${s.dim(a.executionMode)}\n  ${a.description ?? ''}\n  tools: ${tools || '-'}\n${versionsText(a, s)}`;
    })
    .join('');
}
