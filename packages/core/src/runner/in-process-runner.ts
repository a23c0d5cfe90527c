import type {
  Checkpoint,
  Decision,
  InputMessage,
  RunEvent,
  RunOptions,
  ToolExecutionResult,
} from '@baton/protocol';
import type { AgentDefinition } from '../agent.ts';
import { BatonError, UnknownAgentError } from '../errors.ts';
import { Engine, type Transition } from '../engine/engine.ts';
import { executeTool } from '../engine/execute-tool.ts';
import { assistantMessageId } from '../engine/inference.ts';
import type { ToolInvocation } from '../engine/tool-round.ts';
import { InferenceAccumulator } from '../model.ts';
import { retryingModelCall } from '../model-call-retry.ts';
import { modelRetryPolicy } from '../model-retry.ts';
import type { Clock } from '../ports.ts';
import { persistentThreadState } from '../state-keys.ts';
import { deferred, type Deferred } from './deferred.ts';
import { MemoryRunStore, MemoryThreadStore } from './memory-store.ts';

export interface InProcessRunnerOptions {
  readonly agents: readonly AgentDefinition[];
  readonly clock: Clock;
  readonly ids?: () => string;
  readonly tenantId?: string;
}

export interface StartRunRequest {
  readonly agent: string;
  readonly threadId?: string;
  readonly input: readonly InputMessage[];
  readonly options?: RunOptions;
}

interface LiveRun {
  readonly engine: Engine;
  version: number;
  checkpoint: Checkpoint;
  wake: Deferred<void>;
  readonly abort: AbortController;
  readonly finished: Promise<Checkpoint>;
}

type Listener = (event: RunEvent) => void;

/**
 * Drives runs end to end in one process with in-memory ports. It is the reference the
 * distributed worker must match and the baseline benchmarks compare against.
 */
export class InProcessRunner {
  readonly store: MemoryRunStore;
  readonly threads = new MemoryThreadStore();
  private readonly engines = new Map<string, Engine>();
  private readonly live = new Map<string, LiveRun>();
  private readonly listeners = new Set<Listener>();
  private readonly clock: Clock;
  private readonly ids: () => string;
  private readonly tenantId: string;

  constructor(opts: InProcessRunnerOptions) {
    this.clock = opts.clock;
    let n = 0;
    this.ids = opts.ids ?? (() => `r${(n += 1)}`);
    this.tenantId = opts.tenantId ?? 'local';
    this.store = new MemoryRunStore(() => this.clock.now());
    for (const agent of opts.agents) this.engines.set(agent.name, new Engine(agent));
  }

  onEvent(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  events(runId: string, afterSeq = 0): RunEvent[] {
    return this.store.events(runId, afterSeq);
  }

  async checkpoint(runId: string): Promise<Checkpoint | null> {
    return (await this.store.load(runId))?.checkpoint ?? null;
  }

  /** Creates the run and starts driving it; resolves once it is durably created. */
  async start(
    request: StartRunRequest,
  ): Promise<{ runId: string; threadId: string; turnId: string; finished: Promise<Checkpoint> }> {
    const engine = this.engines.get(request.agent);
    if (!engine) throw new UnknownAgentError(request.agent, [...this.engines.keys()]);
    const runId = this.ids();
    const threadId = request.threadId ?? `thread-${runId}`;
    const thread = this.threads.get(threadId);
    if (thread.activeRunId)
      throw new BatonError(
        'thread_busy',
        `thread ${threadId} already has active run ${thread.activeRunId}`,
      );
    const turnId = `turn-${thread.runIds.length + 1}`;
    const t = engine.create(
      {
        identity: { runId, threadId, turnId, tenantId: this.tenantId, agent: request.agent },
        input: request.input,
        ...(request.options ? { options: request.options } : {}),
        history: thread.messages,
        threadState: thread.state,
      },
      this.clock.now(),
    );
    const created = await this.store.create(t.checkpoint, t.events);
    this.publish(created.events);
    thread.activeRunId = runId;
    thread.runIds.push(runId);
    const done = deferred<Checkpoint>();
    const run: LiveRun = {
      engine,
      version: created.version,
      checkpoint: t.checkpoint,
      wake: deferred(),
      abort: new AbortController(),
      finished: done.promise,
    };
    this.live.set(runId, run);
    this.drive(run).then(
      (cp) => done.resolve(cp),
      (err: unknown) => done.reject(err),
    );
    return { runId, threadId, turnId, finished: run.finished };
  }

  async submitDecisions(
    runId: string,
    decisions: readonly Decision[],
  ): Promise<{ accepted: number; duplicates: number }> {
    const run = this.requireLive(runId);
    const t = run.engine.receiveDecisions(run.checkpoint, decisions, this.clock.now());
    if (t.accepted.length > 0) await this.commit(run, t);
    run.wake.resolve();
    return { accepted: t.accepted.length, duplicates: t.duplicates.length };
  }

  async cancel(runId: string): Promise<void> {
    const run = this.live.get(runId);
    if (!run || run.checkpoint.status === 'done') return;
    await this.commit(run, run.engine.requestCancel(run.checkpoint, this.clock.now()));
    run.abort.abort(new BatonError('conflict', 'run cancelled'));
    run.wake.resolve();
  }

  private requireLive(runId: string): LiveRun {
    const run = this.live.get(runId);
    if (!run) throw new BatonError('run_not_found', `run ${runId} does not exist`);
    return run;
  }

  private publish(events: readonly RunEvent[]): void {
    for (const e of events) for (const l of this.listeners) l(e);
  }

  private async commit(run: LiveRun, t: Transition): Promise<void> {
    const result = await this.store.commit(
      run.checkpoint.identity.runId,
      run.version,
      t.checkpoint,
      t.events,
      t.trigger,
    );
    run.version = result.version;
    run.checkpoint = t.checkpoint;
    this.publish(result.events);
  }

  private async drive(run: LiveRun): Promise<Checkpoint> {
    const { engine } = run;
    for (;;) {
      const next = engine.plan(run.checkpoint);
      const now = this.clock.now();
      try {
        if (await this.advance(run, next.kind, now)) return run.checkpoint;
      } catch (error) {
        // A throwing hook or a broken invariant is a runtime error: the run ends with Error.
        await this.commit(
          run,
          engine.fail(run.checkpoint, (error as Error).message, this.clock.now()),
        );
      }
    }
  }

  /** Performs one planned action; returns true when the run is finished. */
  private async advance(
    run: LiveRun,
    kind: ReturnType<Engine['plan']>['kind'],
    now: number,
  ): Promise<boolean> {
    const { engine } = run;
    {
      switch (kind) {
        case 'done':
          this.closeThread(run);
          return true;
        case 'wait':
          run.wake = deferred();
          await run.wake.promise;
          break;
        case 'start':
          await this.commit(run, engine.start(run.checkpoint, now));
          break;
        case 'step':
          await this.commit(run, engine.beginStep(run.checkpoint, now));
          break;
        case 'infer':
          await this.infer(run);
          break;
        case 'execute':
          await this.executeRound(run);
          break;
        case 'resume':
          await this.commit(run, engine.applyDecisions(run.checkpoint, now));
          break;
        case 'finish_step':
          await this.commit(run, engine.finishStep(run.checkpoint, now));
          break;
        case 'cancel':
          await this.commit(run, engine.cancel(run.checkpoint, now));
          break;
      }
    }
    return false;
  }

  /** Streams the model, retrying retryable failures within the agent's budget as workers do. */
  private async infer(run: LiveRun): Promise<void> {
    const { engine } = run;
    const request = engine.inferenceRequest(run.checkpoint);
    const messageId = assistantMessageId(request.runId, request.step);
    let streamed = false;
    const outcome = await retryingModelCall({
      policy: modelRetryPolicy(engine.agent.modelRetry),
      clock: this.clock,
      signal: run.abort.signal,
      call: async (signal) => {
        const acc = new InferenceAccumulator();
        for await (const part of engine.agent.model.stream(request, signal)) {
          acc.push(part);
          if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
            const type = part.type === 'text-delta' ? 'text.delta' : 'reasoning.delta';
            streamed = true;
            const events = await this.store.append(request.runId, run.version, [
              { type, step: request.step, messageId, delta: part.delta },
            ]);
            this.publish(events);
          }
        }
        return acc.result();
      },
      // plan() says cancel next: nothing to record.
      interrupt: async () =>
        run.checkpoint.cancelRequested || run.abort.signal.aborted ? 'cancel' : undefined,
      onRetry: async (retry) => {
        // The failed attempt's text is withdrawn before the next one streams.
        const reset = streamed
          ? [{ type: 'inference.reset' as const, step: request.step, messageId }]
          : [];
        streamed = false;
        const events = await this.store.append(request.runId, run.version, [
          { type: 'model.retry', step: request.step, ...retry },
          ...reset,
        ]);
        this.publish(events);
      },
    });
    if (outcome.kind === 'interrupted') return;
    if (outcome.kind === 'failed') {
      const tries = outcome.attempts > 1 ? ` after ${outcome.attempts} attempts` : '';
      await this.commit(
        run,
        engine.fail(run.checkpoint, `model failed${tries}: ${outcome.message}`, this.clock.now()),
      );
      return;
    }
    await this.commit(run, engine.commitInference(run.checkpoint, outcome.value, this.clock.now()));
  }

  /**
   * One tool round with the seed's concurrent model: every allowed call runs at once (parallel
   * modes), each result is committed as it lands, and a decision that arrives meanwhile is
   * applied and replayed immediately when the replay policy allows it.
   */
  private async executeRound(run: LiveRun): Promise<void> {
    const { engine } = run;
    const inflight = new Map<string, Promise<{ key: string; result: ToolExecutionResult }>>();
    const launch = (invocations: readonly ToolInvocation[]): void => {
      for (const inv of invocations) {
        const key = `${inv.toolCallId}#${inv.attempt}`;
        if (inflight.has(key)) continue;
        const tool = engine.ctx.tools.get(inv.toolName);
        inflight.set(
          key,
          executeTool(tool, inv, {
            identity: run.checkpoint.identity,
            state: run.checkpoint.state,
            signal: run.abort.signal,
            now: () => this.clock.now(),
            sleep: (ms, signal) => this.clock.sleep(ms, signal),
          }).then((result) => ({ key, result })),
        );
      }
    };
    const prepared = engine.prepareTools(run.checkpoint, this.clock.now());
    await this.commit(run, prepared);
    launch(prepared.invocations);
    while (inflight.size > 0) {
      run.wake = deferred();
      const winner = await Promise.race([
        ...inflight.values(),
        run.wake.promise.then(() => null),
      ]).catch((error: unknown) => {
        if (run.abort.signal.aborted) return 'aborted' as const;
        throw error;
      });
      if (winner === 'aborted' || run.checkpoint.cancelRequested) return;
      if (winner) {
        inflight.delete(winner.key);
        await this.commit(
          run,
          engine.applyToolResults(run.checkpoint, [winner.result], this.clock.now()),
        );
      }
      const next = engine.plan(run.checkpoint);
      if (next.kind === 'resume') {
        await this.commit(run, engine.applyDecisions(run.checkpoint, this.clock.now()));
      }
      if (engine.plan(run.checkpoint).kind === 'execute') {
        const more = engine.prepareTools(run.checkpoint, this.clock.now());
        await this.commit(run, more);
        launch(more.invocations);
      }
      if (run.checkpoint.status === 'done') return;
    }
  }

  private closeThread(run: LiveRun): void {
    const cp = run.checkpoint;
    const thread = this.threads.get(cp.identity.threadId);
    if (thread.activeRunId !== cp.identity.runId) return;
    thread.messages = cp.messages;
    thread.state = persistentThreadState(run.engine.ctx.registry, cp.state);
    thread.activeRunId = null;
  }
}
