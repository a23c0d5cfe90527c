import { JOB_PAYLOAD_VERSION, type ToolExecutionResult } from '@baton/protocol';
import type { ToolInvocation } from '@baton/core';
import { Job } from 'bullmq';
import { type Loaded, STALLED_TOO_OFTEN } from '@baton/runtime/internal';
import { deathsOf } from './stall-accounting.ts';
import type { WorkerDeps } from './worker-deps.ts';

/**
 * 'children': this job became the round's parent and must wait for its children;
 * 'delegated': every call already has a job (or joined another parent); their results drive the run;
 * 'recorded': a call's result is on record now (its job had failed for good, and that failure is
 * now the call's result; or its job completed after this pass read the mailbox): apply it.
 */
export type FanOutOutcome = 'children' | 'delegated' | 'recorded';

/**
 * What a tool job that failed for good means for its call. A job fails (rather than completing
 * with the tool's own error, see ToolProcessor) only when the worker running it kept dying or
 * hanging, or when Baton itself could not run it: neither is the tool's failure, and the model is
 * told which one happened.
 */
export function failedToolJobResult(
  inv: Pick<ToolInvocation, 'toolCallId' | 'toolName' | 'attempt'>,
  failedReason: string,
  stalls: number,
  now: number,
): ToolExecutionResult {
  const crashed = failedReason === STALLED_TOO_OFTEN;
  return {
    toolCallId: inv.toolCallId,
    attempt: inv.attempt,
    result: crashed
      ? {
          kind: 'error',
          code: 'tool_crashed_worker',
          // No death counted: BullMQ's backstop gave it up (StallAccounting.bullBackstop).
          message:
            stalls > 0
              ? `tool ${inv.toolName} did not finish: the worker running it died or stopped responding ${String(stalls)} times (crash, out of memory, kill); Baton stopped retrying it`
              : `tool ${inv.toolName} did not finish: its job lost its worker too many times before it could run (workers crashing or overloaded); Baton stopped retrying it`,
        }
      : {
          kind: 'error',
          code: 'tool_job_failed',
          message: `tool ${inv.toolName} could not be run: ${failedReason || 'unknown error'}`,
        },
    patches: [],
    startedAt: now,
    finishedAt: now,
  };
}

/**
 * What the run's `parent` key holds: the step job that waits for a round's tool jobs, and the
 * step of that round. Read back by a replay to join that job while it waits.
 */
export function parentRecordOf(job: Job, step: number): string {
  return JSON.stringify({ id: job.id ?? '', queue: job.queueQualifiedName, step });
}

/**
 * Parallel modes: each call becomes a child job of the step job, so the step waits for the round
 * in BullMQ's waiting-children state, holding no lease and no worker slot. A replay joins the
 * round's waiting parent when there is one (BullMQ accepts a child for a parent in
 * waiting-children), so the round stays one flow in Bull Board.
 */
export async function fanOutToolCalls(
  deps: WorkerDeps,
  job: Job,
  state: Loaded,
  invocations: readonly ToolInvocation[],
  log: WorkerDeps['logger'],
  round: {
    /** Every call was started by the commit just before this (none can have a job yet). */
    readonly startedHere?: boolean;
    /** That commit recorded this job as the round's parent (RedisRunStore.commit). */
    readonly parentRecorded?: boolean;
  } = {},
): Promise<FanOutOutcome> {
  const startedHere = round.startedHere === true;
  const { identity, step } = state.checkpoint;
  const self = { id: job.id ?? '', queue: job.queueQualifiedName };
  // A fresh round has no jobs yet; only a re-entry after a crash or a replay must look at each.
  let fresh = startedHere;
  if (!fresh) {
    const jobKeys = deps.queues.toolJobKeys(job.queueName, identity.runId, invocations);
    fresh = jobKeys.length > 0 && (await deps.redis.exists(...jobKeys)) === 0;
  }
  let parent = self;
  // Only a replay (a later attempt) or a re-entry can find a parent of this round waiting.
  const recorded =
    fresh && invocations.every((inv) => inv.attempt === 0)
      ? null
      : await deps.store.bookkeeping.parentRecord(identity.runId);
  if (recorded) {
    const candidate = JSON.parse(recorded) as { id: string; queue: string; step: number };
    if (candidate.step === step && candidate.id !== self.id) {
      const queue = deps.queues.fromQualifiedName(candidate.queue);
      const parentJob = queue ? await Job.fromId(queue, candidate.id) : undefined;
      if (parentJob && (await parentJob.getState()) === 'waiting-children')
        parent = { id: candidate.id, queue: candidate.queue };
    }
  }
  let added = 0;
  for (const inv of invocations) {
    const existing = fresh
      ? undefined
      : await deps.queues.toolJob(job.queueName, identity.runId, inv.toolCallId, inv.attempt);
    if (existing) {
      const state = await existing.getState();
      if (state === 'failed') {
        await deps.mailbox.record(
          identity.runId,
          failedToolJobResult(
            inv,
            existing.failedReason,
            await deathsOf(deps.redis, existing),
            deps.clock.now(),
          ),
        );
        // Remembered here too: the worker that failed it may have died before it could say so,
        // and the run's clean-up removes what is listed.
        await deps.store.bookkeeping.rememberFailedJob(
          identity.runId,
          `${existing.queueName}:${existing.id ?? ''}`,
        );
        return 'recorded';
      }
      if (state === 'completed') {
        // A completed job means a result on record only if it recorded one: a job that ran
        // while its call was not running at this attempt (a lost start job; an add that reached
        // a Redis which had lost the commit before it) completed `stale` having done nothing,
        // and the id is this attempt's for good. Left there it would answer every pass
        // "delegated" for ever: it is replaced. A result recorded since this pass read the
        // mailbox is applied instead.
        if (await deps.mailbox.get(identity.runId, inv.toolCallId, inv.attempt)) return 'recorded';
        log.warn(
          { jobId: existing.id, toolCallId: inv.toolCallId },
          'tool job replaced: it completed without a result',
        );
        // Refused (BullMQ throws) if it is taken meanwhile: this pass fails and is retried.
        await existing.remove();
      } else if (state !== 'unknown') continue; // it runs, or will: its result drives the run
      // 'unknown': removed since it was read (its retention ran out): added again like a new one.
    }
    await deps.queues.addToolChild(
      {
        v: JOB_PAYLOAD_VERSION,
        kind: 'tool',
        runId: identity.runId,
        tenantId: identity.tenantId,
        ...(identity.priority === undefined ? {} : { priority: identity.priority }),
        // The version this step ran on (this worker's): its tools run on the same code.
        ...versionField(deps.queues.versions.localVersion(identity.agent) ?? identity.agentVersion),
        step,
        toolCallId: inv.toolCallId,
        attempt: inv.attempt,
      },
      identity.agent,
      parent,
    );
    added += 1;
  }
  if (added === 0 || parent !== self) return 'delegated';
  log.debug({ children: added, parent: parent.id }, 'tool calls fanned out');
  if (round.parentRecorded !== true)
    await deps.store.bookkeeping.recordParent(identity.runId, parentRecordOf(job, step));
  return 'children';
}

function versionField(agentVersion: string | undefined): { agentVersion?: string } {
  return agentVersion === undefined ? {} : { agentVersion };
}
