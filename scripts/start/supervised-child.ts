/**
 * One child process of `npm start` (the API or the worker), kept running: a crash restarts it
 * alone, after a back-off (restart-budget.ts), while Redis and the other child keep going, so
 * runs and their data survive. A child that exits before it was ever ready since it was (re)started
 * on purpose is a start-up failure (bad configuration, an agents file that does not load):
 * restarting it would print the same error again, so the owner decides (onGiveUp).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { RestartBudget } from './restart-budget.ts';

export interface ChildSpec {
  readonly name: string;
  /** Absolute path of the script Node runs. */
  readonly script: string;
  /** Printed before each of its output lines. */
  readonly tag: string;
  /** The line that says it is ready; the first group is handed to onReady. */
  readonly readyLine: RegExp;
}

export interface ChildHooks {
  readonly say: (line: string) => void;
  /** Every time the child printed its ready line; `restarts` counts starts before this one. */
  readonly onReady: (detail: string, restarts: number) => void;
  /** The child is down for good until reload(): it failed to start, or crashed too often. */
  readonly onGiveUp: (reason: string) => void;
  /**
   * With `keepRestarting`, instead of onGiveUp for too many crashes: the child is down and is
   * started again in `retryMs` (and then as its budget says).
   */
  readonly onDown?: (reason: string, retryMs: number) => void;
}

export interface ChildOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  readonly hooks: ChildHooks;
  readonly budget?: RestartBudget;
  /**
   * How long a stopping child gets before SIGKILL (the worker finishes its jobs first). Default:
   * the child's own limit (SHUTDOWN_GRACE_MS in its environment, default 10 s, plus the fixed
   * 5 s margin after which it exits by itself: SHUTDOWN_MARGIN_MS) and 2 s more, so a child is
   * killed only when even its own hard exit did not happen.
   */
  readonly stopGraceMs?: number;
  /**
   * Never give up on a crash loop: after too many crashes in the budget's window, say so
   * (onDown) and start it again every `retryMs` (the worker of `npm start`: the API, Redis and
   * the runs stay while an agent crashes it).
   */
  readonly keepRestarting?: { readonly retryMs: number };
}

/** SHUTDOWN_MARGIN_MS of @baton/runtime (not imported: the supervisor loads none of it). */
const CHILD_EXIT_MARGIN_MS = 5_000;

const describeExit = (code: number | null, signal: NodeJS.Signals | null): string =>
  signal ? `signal ${signal}` : `code ${code ?? 'none'}`;

export class SupervisedChild {
  readonly spec: ChildSpec;
  private readonly options: ChildOptions;
  private readonly budget: RestartBudget;
  private child: ChildProcess | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** Ready at least once since the last start someone asked for (not a crash restart). */
  private readySinceRequest = false;
  private starts = 0;
  private stopped = false;
  private reloads: Promise<void> = Promise.resolve();

  constructor(spec: ChildSpec, options: ChildOptions) {
    this.spec = spec;
    this.options = options;
    this.budget = options.budget ?? new RestartBudget();
  }

  /** The running process's id (tests kill it), if one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    this.readySinceRequest = false;
    this.spawnChild();
  }

  /**
   * Stop the child if it runs and start it again, with a fresh crash budget (a changed file).
   * Reloads run one after the other: two saves in a row must not leave two children.
   */
  reload(): Promise<void> {
    this.reloads = this.reloads.then(async () => {
      if (this.stopped) return;
      clearTimeout(this.retry);
      this.budget.reset();
      await this.terminate();
      if (!this.stopped) this.start();
    });
    return this.reloads;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    await this.terminate();
  }

  private spawnChild(): void {
    const { hooks } = this.options;
    const restarts = this.starts;
    this.starts += 1;
    const child = spawn(process.execPath, [this.spec.script], {
      cwd: this.options.cwd,
      env: this.options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        process.stdout.write(`${this.spec.tag} ${line}\n`);
        const match = this.spec.readyLine.exec(line);
        if (match && child === this.child) {
          this.readySinceRequest = true;
          hooks.onReady(match[1] ?? '', restarts);
        }
      });
    }
    child.on('error', (err) => hooks.say(`${this.spec.name} failed to start: ${err.message}`));
    child.on('exit', (code, signal) => this.exited(child, code, signal));
  }

  private exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child) return;
    this.child = undefined;
    if (this.stopped) return;
    const { hooks } = this.options;
    const how = describeExit(code, signal);
    if (!this.readySinceRequest) {
      hooks.onGiveUp(`the ${this.spec.name} exited (${how}) before it was ready`);
      return;
    }
    const decision = this.budget.crashed(Date.now());
    const keep = this.options.keepRestarting;
    if (decision.action === 'give_up' && keep) {
      const reason = `the ${this.spec.name} exited (${how}), its ${decision.crashes}th crash in a short while`;
      if (hooks.onDown) hooks.onDown(reason, keep.retryMs);
      else hooks.say(`${reason}; starting it again in ${keep.retryMs / 1000} s`);
      this.retry = setTimeout(() => {
        if (!this.stopped) this.spawnChild();
      }, keep.retryMs);
      return;
    }
    if (decision.action === 'give_up') {
      hooks.onGiveUp(
        `the ${this.spec.name} exited (${how}), its ${decision.crashes}th crash in a short while; not restarting it again`,
      );
      return;
    }
    hooks.say(
      `the ${this.spec.name} exited unexpectedly (${how}); restarting it in ${decision.delayMs / 1000} s (restart ${decision.attempt} in this window; Redis, the runs and the other process keep going)`,
    );
    this.retry = setTimeout(() => {
      if (!this.stopped) this.spawnChild();
    }, decision.delayMs);
  }

  private get stopGraceMs(): number {
    if (this.options.stopGraceMs !== undefined) return this.options.stopGraceMs;
    const grace = Number(this.options.env['SHUTDOWN_GRACE_MS'] ?? 10_000);
    return (Number.isFinite(grace) && grace >= 0 ? grace : 10_000) + CHILD_EXIT_MARGIN_MS + 2_000;
  }

  /** SIGTERM, then SIGKILL after the grace period; resolves when the process is gone. */
  private async terminate(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      this.child = undefined;
      return;
    }
    this.child = undefined;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => {
      this.options.hooks.say(
        `the ${this.spec.name} did not exit ${String(Math.round(this.stopGraceMs / 1000))} s after SIGTERM; killing it`,
      );
      child.kill('SIGKILL');
    }, this.stopGraceMs);
    await exited;
    clearTimeout(timer);
  }
}
