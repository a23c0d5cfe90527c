import type {
  Checkpoint,
  CheckpointTrigger,
  EventBody,
  RunStatus,
  StatePatch,
  ToolCallState,
  ToolCallStatus,
} from '@baton/protocol';
import { own } from '../own.ts';
import { assertRunTransition } from '../run-status.ts';
import { applyPatches } from '../state-keys.ts';
import { assertToolCallTransition } from '../tool-call-status.ts';
import type { EngineContext } from './context.ts';

/** Copies what a transition may change; messages and other leaves are never mutated in place. */
function cloneCheckpoint(cp: Checkpoint): Checkpoint {
  const calls: Record<string, ToolCallState> = {};
  for (const [id, call] of Object.entries(cp.calls)) calls[id] = { ...call };
  return {
    ...cp,
    messages: [...cp.messages],
    calls,
    round: [...cp.round],
    state: { run: { ...cp.state.run }, thread: { ...cp.state.thread } },
    usage: { ...cp.usage },
    counters: {
      consecutiveErrors: cp.counters.consecutiveErrors,
      recentToolCalls: [...cp.counters.recentToolCalls],
      lastStepTools: [...cp.counters.lastStepTools],
    },
    inbox: [...cp.inbox],
    decisionLog: [...cp.decisionLog],
    metadata: { ...cp.metadata },
  };
}

/**
 * A working copy for one transition: every status change goes through the transition tables and
 * emits its event, so the event log and the checkpoint cannot disagree.
 */
export class Draft {
  readonly ctx: EngineContext;
  readonly now: number;
  readonly cp: Checkpoint;
  readonly events: EventBody[] = [];
  trigger: CheckpointTrigger | null = null;

  constructor(ctx: EngineContext, source: Checkpoint, now: number) {
    this.ctx = ctx;
    this.now = now;
    this.cp = cloneCheckpoint(source);
    this.cp.updatedAt = now;
  }

  emit(event: EventBody): void {
    this.events.push(event);
  }

  /** Keeps the first trigger: it names the boundary that caused the commit. */
  mark(trigger: CheckpointTrigger): void {
    this.trigger ??= trigger;
  }

  setRunStatus(to: RunStatus): void {
    const from = this.cp.status;
    if (from === to) return;
    assertRunTransition(from, to, this.cp.identity.runId);
    this.cp.status = to;
    this.emit({ type: 'run.status', from, to });
  }

  call(id: string): ToolCallState {
    const call = own(this.cp.calls, id);
    if (!call) throw new Error(`tool call ${id} is not part of run ${this.cp.identity.runId}`);
    return call;
  }

  setCallStatus(id: string, to: ToolCallStatus): ToolCallState {
    const call = this.call(id);
    const from = call.status;
    assertToolCallTransition(from, to, id);
    call.status = to;
    this.emit({ type: 'tool_call.status', toolCallId: id, toolName: call.name, from, to });
    return call;
  }

  applyStatePatches(patches: readonly StatePatch[]): void {
    if (patches.length === 0) return;
    this.cp.state = applyPatches(this.ctx.registry, this.cp.state, patches);
    const byScope = { run: [] as StatePatch[], thread: [] as StatePatch[] };
    for (const p of patches) byScope[this.ctx.registry.get(p.key)?.scope ?? 'run'].push(p);
    if (byScope.run.length > 0)
      this.emit({ type: 'state.delta', scope: 'run', patches: byScope.run });
    if (byScope.thread.length > 0)
      this.emit({ type: 'state.delta', scope: 'thread', patches: byScope.thread });
  }

  roundCalls(): ToolCallState[] {
    return this.cp.round.map((id) => this.call(id));
  }
}
