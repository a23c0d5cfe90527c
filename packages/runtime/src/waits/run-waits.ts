import { DecisionError, type ToolWaitpoint } from '@baton/core';
import {
  BatonError,
  type Checkpoint,
  type DecisionInput,
  type DecisionSource,
  isBatonError,
  type JsonValue,
  type RunIdentity,
  type SendEventRequest,
  type SendEventResponse,
  type WaitpointCreated,
  type WaitFor,
  type WaitpointOutcome,
} from '@baton/protocol';
import type { Logger } from 'pino';
import type { SubmittedDecisions } from '../decision-routing.ts';
import type { BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';
import type { Loaded } from '../run-committer.ts';
import { EventWaiters, type EventWaiter } from './event-waiters.ts';
import { LegacyWaitTimeouts } from './wait-timeouts.ts';
import {
  WaitpointStore,
  hashWaitpointToken,
  isWaitpointTokenShape,
  newWaitpointToken,
} from './waitpoints.ts';

/** A waitpoint URL lives this long unless its creator or the call's own expiry says otherwise. */
const DEFAULT_WAITPOINT_TTL_MS = 24 * 3600 * 1000;
/** How long a waiter put back after a failed resume keeps its set alive (the reconciler renews it). */
const REQUEUE_TTL_MS = 3600 * 1000;
/** Waiters one event resumes concurrently (each is one decision commit). */
const EVENT_CONCURRENCY = 16;

export interface RunWaitsDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly now: () => number;
  readonly logger: Logger;
  /** The decisions door (RunService.submitDecisions): every completion is a decision. */
  readonly decide: (
    tenantId: string,
    runId: string,
    inputs: readonly (DecisionInput & { readonly source?: DecisionSource })[],
  ) => Promise<SubmittedDecisions>;
  /** A tenant's run (404 for another tenant's). */
  readonly load: (tenantId: string, runId: string) => Promise<Loaded>;
  /** Whose run it is (legacy timeouts name only the run); null when it is gone. */
  readonly tenantOf: (runId: string) => Promise<string | null>;
}

/** Keeps the later of two expiries for the call, and the hash alive until its latest. */
const NOTE_WAITPOINT = `
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > cur then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
local want = tonumber(ARGV[2]) - tonumber(ARGV[3])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < want then redis.call('PEXPIRE', KEYS[1], math.max(want, 1)) end
return 1
`;

/** Refusals that mean "this waiter is no longer waiting": it is skipped, not an error. */
const SETTLED = new Set([
  'run_not_found',
  'run_done',
  'run_cancelled',
  'call_not_suspended',
  'call_unknown',
  'decision_conflict',
]);

/** A call_not_suspended refusal for a call whose tool is still running (or about to). */
function isRunning(details: unknown): boolean {
  const status = (details as { status?: unknown } | undefined)?.status;
  return status === 'running' || status === 'new';
}

function waitpointNotFound(): BatonError {
  return new BatonError('not_found', 'no such waitpoint: the URL is wrong or has expired');
}

/**
 * Waits a call can be completed by besides a person's decision (issue 36, items 3 and 4):
 * waitpoint URLs, events with a correlation key, and the timeouts of event waits. Each
 * completion is a decision through RunService.submitDecisions (the same commit path and
 * RESUME_TOOL_CALL gate as a person's), with its `source` recorded; the engine's one decision
 * per call makes every race (two events, an event and its timeout, a waitpoint and a person)
 * end with exactly one outcome.
 */
export class RunWaits {
  private readonly deps: RunWaitsDeps;
  private readonly waitpoints: WaitpointStore;
  private readonly waiters: EventWaiters;
  private readonly legacyTimeouts: LegacyWaitTimeouts;

  constructor(deps: RunWaitsDeps) {
    this.deps = deps;
    this.waitpoints = new WaitpointStore(deps.redis, deps.keys);
    this.waiters = new EventWaiters(deps.redis, deps.keys);
    this.legacyTimeouts = new LegacyWaitTimeouts(deps.redis, deps.keys);
  }

  /**
   * A URL that completes the suspended call `callId` of the run without an API key. The token
   * is returned here only: Redis keeps its SHA-256. It expires after `expiresInMs`, or with the
   * call's own wait, whichever comes first.
   */
  async createWaitpoint(
    tenantId: string,
    runId: string,
    callId: string,
    expiresInMs = DEFAULT_WAITPOINT_TTL_MS,
  ): Promise<WaitpointCreated> {
    const { checkpoint } = await this.deps.load(tenantId, runId);
    const call = Object.hasOwn(checkpoint.calls, callId) ? checkpoint.calls[callId] : undefined;
    if (!call)
      throw new DecisionError('call_unknown', `run ${runId} has no tool call ${callId}`, {
        toolCallId: callId,
      });
    if (call.status !== 'suspended')
      throw new DecisionError(
        'call_not_suspended',
        `tool call ${callId} is ${call.status}, not suspended; only a waiting call takes a waitpoint`,
        { toolCallId: callId, status: call.status },
      );
    const now = this.deps.now();
    // It expires with the call's wait: its own expiry, and its deadline (after which the call
    // is decided and the URL could only be refused).
    const expiresAt = Math.min(
      now + expiresInMs,
      call.ticket?.waitFor?.expiresAt ?? Infinity,
      call.ticket?.deadline?.at ?? Infinity,
    );
    const token = newWaitpointToken();
    const responseSchema = call.ticket?.responseSchema;
    await this.waitpoints.create(hashWaitpointToken(token), {
      tenantId,
      runId,
      toolCallId: callId,
      ...(responseSchema ? { responseSchema } : {}),
      expiresAt,
      createdAt: now,
    });
    await this.noteWaitpoint(runId, callId, expiresAt);
    return {
      url: `/w/${token}`,
      token,
      runId,
      toolCallId: callId,
      expiresAt,
      ...(responseSchema ? { responseSchema } : {}),
    };
  }

  /**
   * The waitpoints made through the API for the run's calls that are still valid: call id ->
   * what the run's view shows as the call's `waitFor` (a call whose ticket names no wait).
   */
  async apiWaitpoints(runId: string): Promise<Map<string, WaitFor>> {
    const all = await this.deps.redis.hgetall(this.deps.keys.runWaitpoints(runId));
    const now = this.deps.now();
    const out = new Map<string, WaitFor>();
    for (const [callId, at] of Object.entries(all)) {
      const expiresAt = Number(at);
      if (expiresAt > now) out.set(callId, { kind: 'waitpoint', expiresAt });
    }
    return out;
  }

  /** Keeps the latest expiry of the call's API-made waitpoints (see apiWaitpoints). */
  private async noteWaitpoint(runId: string, callId: string, expiresAt: number): Promise<void> {
    await this.deps.redis.eval(
      NOTE_WAITPOINT,
      1,
      this.deps.keys.runWaitpoints(runId),
      callId,
      String(expiresAt),
      String(this.deps.now()),
    );
  }

  /**
   * A waitpoint a tool creates for its own call while it runs (ToolContext.waitpoint): the call
   * is not suspended yet, so a completion that comes first is kept (completeWaitpoint) and
   * applied when the run starts waiting (registerWaiting).
   */
  async createToolWaitpoint(
    identity: RunIdentity,
    callId: string,
    expiresInMs = DEFAULT_WAITPOINT_TTL_MS,
  ): Promise<ToolWaitpoint> {
    const now = this.deps.now();
    const expiresAt = now + expiresInMs;
    const token = newWaitpointToken();
    await this.waitpoints.create(hashWaitpointToken(token), {
      tenantId: identity.tenantId,
      runId: identity.runId,
      toolCallId: callId,
      expiresAt,
      createdAt: now,
    });
    return { url: `/w/${token}`, token, expiresAt, waitFor: { kind: 'waitpoint', expiresAt } };
  }

  /**
   * Completes the waitpoint's call with `payload` (a resume decision, source 'waitpoint').
   * Wrong or expired token: 404. A payload the call's responseSchema refuses: 422, nothing
   * stored (the URL can be used again). A repeat: the first completion's answer, nothing done.
   */
  async completeWaitpoint(
    token: string,
    payload: JsonValue | undefined,
  ): Promise<WaitpointOutcome> {
    if (!isWaitpointTokenShape(token)) throw waitpointNotFound();
    const hash = hashWaitpointToken(token);
    const found = await this.waitpoints.get(hash, this.deps.now());
    if (!found) throw waitpointNotFound();
    const { record } = found;
    const base = { runId: record.runId, toolCallId: record.toolCallId };
    if (found.outcome) return { ...base, ...found.outcome, repeat: true };
    // One decision id per waitpoint: a concurrent or retried completion is the same decision.
    const decisionId = `waitpoint-${hash.slice(0, 32)}`;
    try {
      const result = await this.deps.decide(record.tenantId, record.runId, [
        {
          decisionId,
          toolCallId: record.toolCallId,
          action: 'resume',
          ...(payload !== undefined ? { payload } : {}),
          source: 'waitpoint',
        },
      ]);
      const first = await this.waitpoints.recordOutcome(hash, {
        decisionId,
        completedAt: this.deps.now(),
      });
      return { ...base, ...first, repeat: result.accepted.length === 0 };
    } catch (error) {
      // The call's tool made this waitpoint and still runs: kept until the call suspends.
      if (isBatonError(error) && error.code === 'call_not_suspended' && isRunning(error.details)) {
        await this.keepEarly(
          record.runId,
          record.toolCallId,
          decisionId,
          payload,
          record.expiresAt,
        );
        const first = await this.waitpoints.recordOutcome(hash, {
          decisionId,
          completedAt: this.deps.now(),
        });
        return { ...base, ...first, repeat: false };
      }
      // This waitpoint's own decision was taken with another body: a repeat of the first.
      if (
        isBatonError(error) &&
        error.code === 'decision_conflict' &&
        (error.details as { decisionId?: unknown } | undefined)?.decisionId === decisionId
      ) {
        const first = await this.waitpoints.recordOutcome(hash, {
          decisionId,
          completedAt: this.deps.now(),
        });
        return { ...base, ...first, repeat: true };
      }
      throw error;
    }
  }

  /**
   * Resumes every call of the tenant waiting for this event name and key, each with
   * `{ event: { name, key, data } }` (source 'event'). The waiters are claimed at once (each by
   * one event); an event nobody waits for resumes nothing and is not kept.
   */
  async sendEvent(tenantId: string, event: SendEventRequest): Promise<SendEventResponse> {
    const waiters = await this.waiters.claim(tenantId, event.name, event.key);
    const runs: string[] = [];
    let next = 0;
    const payload: JsonValue = {
      event: { name: event.name, key: event.key, data: event.data ?? null },
    };
    const work = async (): Promise<void> => {
      for (;;) {
        const waiter = waiters[next];
        next += 1;
        if (!waiter) return;
        try {
          if (await this.resolve(tenantId, waiter, `event-${waiter.callId}`, payload, 'event'))
            runs.push(waiter.runId);
        } catch (err) {
          // Claimed but not resumed (Redis trouble): the waiter goes back into the index, so
          // the next such event (or a retry of this one) resumes it; should that fail too, the
          // reconciler re-registers it from the checkpoint.
          this.deps.logger.warn(
            { err, runId: waiter.runId, toolCallId: waiter.callId },
            'an event could not resume a waiting call; it waits on',
          );
          await this.waiters
            .add(
              tenantId,
              event.name,
              event.key,
              waiter,
              this.deps.now() + REQUEUE_TTL_MS,
              this.deps.now(),
            )
            .catch((e: unknown) => {
              this.deps.logger.warn(
                { err: e, runId: waiter.runId },
                'an event waiter could not be re-queued',
              );
            });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(EVENT_CONCURRENCY, waiters.length) }, work));
    return { resumed: runs.length, runs };
  }

  /**
   * Indexes the event waits of a run that now waits (RunCommitter calls this when a commit
   * leaves a run waiting, and the reconciler again for every idle waiting run, so a worker that
   * died between the commit and this call loses no waiter): its suspended calls whose ticket
   * waits for an event and that have no decision yet. Their timeouts are the calls' deadlines,
   * in the timer index (scheduled by the commit itself). Idempotent.
   */
  async registerWaiting(cp: Checkpoint): Promise<void> {
    const { tenantId, runId } = cp.identity;
    if (cp.status === 'done' || cp.cancelRequested) return;
    for (const call of Object.values(cp.calls)) {
      const waitFor = call.ticket?.waitFor;
      if (call.status !== 'suspended' || waitFor === undefined) continue;
      if (waitFor.kind === 'waitpoint') {
        await this.applyEarly(cp, call.id);
        continue;
      }
      if (cp.inbox.some((d) => d.toolCallId === call.id)) continue;
      const expiresAt =
        waitFor.expiresAt ?? (call.completedAt ?? call.createdAt) + waitFor.timeoutMs;
      if (expiresAt <= this.deps.now()) continue;
      await this.waiters.add(
        tenantId,
        waitFor.name,
        waitFor.key,
        { runId, callId: call.id },
        expiresAt,
        this.deps.now(),
      );
    }
  }

  /**
   * Drains the event-wait timeouts the previous release wrote to `p:waits:timeouts` (the
   * reconciler calls this each scan; remove one release after the timer index unification): a
   * due one resumes its call with `{ timedOut: true }` (source 'timeout', decision id
   * `timeout-<callId>`) unless something completed it first. Returns how many due entries were
   * settled (removed; at most `limit`) and how many calls timed out. One that failed for a
   * passing reason (Redis) is logged and stays for the next scan.
   */
  async drainLegacyTimeouts(limit: number): Promise<{ settled: number; fired: number }> {
    const due = await this.legacyTimeouts.due(this.deps.now(), limit);
    let fired = 0;
    let settled = 0;
    for (const t of due) {
      try {
        const tenantId = t.runId === '' ? null : await this.deps.tenantOf(t.runId);
        const waiter = { runId: t.runId, callId: t.callId };
        const payload = { timedOut: true };
        if (
          tenantId !== null &&
          (await this.resolve(tenantId, waiter, `timeout-${t.callId}`, payload, 'timeout'))
        )
          fired += 1;
        await this.legacyTimeouts.remove(t.member);
        settled += 1;
      } catch (err) {
        this.deps.logger.warn(
          { err, runId: t.runId, toolCallId: t.callId },
          'a leftover wait timeout could not fire; the next scan tries again',
        );
      }
    }
    return { settled, fired };
  }

  private async keepEarly(
    runId: string,
    callId: string,
    decisionId: string,
    payload: JsonValue | undefined,
    expiresAt: number,
  ): Promise<void> {
    const key = this.deps.keys.waitpointEarly(runId);
    await this.deps.redis
      .multi()
      .hsetnx(key, callId, JSON.stringify({ decisionId, payload: payload ?? null }))
      .pexpireat(key, expiresAt + 60_000)
      .exec();
  }

  /** Applies a completion kept for a call that was not suspended yet (see keepEarly). */
  private async applyEarly(cp: Checkpoint, callId: string): Promise<void> {
    const { tenantId, runId } = cp.identity;
    const kept = await this.deps.redis.hget(this.deps.keys.waitpointEarly(runId), callId);
    if (!kept) return;
    const { decisionId, payload } = JSON.parse(kept) as { decisionId: string; payload: JsonValue };
    try {
      await this.resolve(tenantId, { runId, callId }, decisionId, payload, 'waitpoint');
    } catch (err) {
      // Checked only now (the ticket's schema did not exist yet): the call waits on, for a
      // decision or a new waitpoint; the commit that made it wait stands.
      this.deps.logger.warn(
        { err, runId, toolCallId: callId },
        'an early waitpoint completion was refused when its call suspended',
      );
    }
  }

  /** One decision for one waiter; false when the waiter was no longer waiting. */
  private async resolve(
    tenantId: string,
    waiter: EventWaiter,
    decisionId: string,
    payload: JsonValue,
    source: DecisionSource,
  ): Promise<boolean> {
    try {
      const result = await this.deps.decide(tenantId, waiter.runId, [
        { decisionId, toolCallId: waiter.callId, action: 'resume', payload, source },
      ]);
      return result.accepted.length > 0;
    } catch (error) {
      if (isBatonError(error) && SETTLED.has(error.code)) return false;
      throw error;
    }
  }
}
