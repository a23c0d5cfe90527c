/**
 * Runs parked on a human approval, through the public surface only: `bench-approval` runs are
 * created with POST /v1/runs, the bench waits until GET /metrics counts them as waiting
 * (`baton_runs{activity="waiting"}`, two ZCARDs whatever the number of runs), reads each one's
 * ticket from GET /v1/runs/:id, and resumes one with POST /v1/runs/:id/decisions while its SSE
 * stream is already open.
 */
import { performance } from 'node:perf_hooks';
import {
  httpJson,
  metricValue,
  mustGet,
  mustPost,
  openEvents,
  runBody,
  type Client,
  type Received,
} from './http-stack.ts';
import { BenchError, mapLimit, pollUntil, sleep } from './lib.ts';

const APPROVAL_AGENT = 'bench-approval';

export async function waitingRuns(c: Client, timeoutMs: number): Promise<number> {
  return (await metricValue(c, 'baton_runs', { activity: 'waiting' }, timeoutMs)) ?? 0;
}

/**
 * Creates `n` bench-approval runs (`directive` shapes their round after the decision) and waits
 * until the metric counts `n` more waiting runs than before.
 */
export async function parkRuns(
  c: Client,
  n: number,
  opts: {
    parallelism: number;
    directive: Record<string, number>;
    timeoutMs: number;
    log?: (m: string) => void;
  },
): Promise<string[]> {
  const before = await waitingRuns(c, opts.timeoutMs);
  const content = JSON.stringify(opts.directive);
  const ids = await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    opts.parallelism,
    async () => {
      const created = await mustPost<{ runId: string }>(
        c,
        '/v1/runs',
        runBody(APPROVAL_AGENT, content),
        opts.timeoutMs,
      );
      return created.runId;
    },
  );
  let seen = 0;
  let lastLog = Date.now();
  await pollUntil(
    async () => {
      seen = (await waitingRuns(c, opts.timeoutMs)) - before;
      if (opts.log && Date.now() - lastLog > 5_000) {
        lastLog = Date.now();
        opts.log(`${seen}/${n} runs parked`);
      }
      return seen >= n;
    },
    opts.timeoutMs,
    () => `${n} runs to park on their approval (${seen} waiting)`,
    100,
  );
  return ids;
}

export interface Ticket {
  readonly toolCallId: string;
  /** Seq of the run's last event: a stream opened after it carries only what follows. */
  readonly lastSeq: number;
}

export async function ticketOf(c: Client, runId: string, timeoutMs: number): Promise<Ticket> {
  const view = await mustGet<{
    status: string;
    lastSeq: number;
    await: { calls: { toolCallId: string }[] } | null;
  }>(c, `/v1/runs/${encodeURIComponent(runId)}`, timeoutMs);
  const call = view.await?.calls[0];
  if (view.status !== 'waiting' || call === undefined)
    throw new BenchError(`run ${runId} is ${view.status}, not waiting on an approval`);
  return { toolCallId: call.toolCallId, lastSeq: view.lastSeq };
}

/**
 * Approves the run's pending call. A 503/429 is retried as its message asks, with the same
 * decisionId, so a decision that was in fact committed before the error is a no-op the second
 * time. Returns the number of retries.
 */
export async function decide(
  c: Client,
  runId: string,
  ticket: Ticket,
  timeoutMs: number,
): Promise<number> {
  const body = {
    decisions: [{ decisionId: `bench-${runId}`, toolCallId: ticket.toolCallId, action: 'resume' }],
  };
  for (let attempt = 1; ; attempt += 1) {
    const path = `/v1/runs/${encodeURIComponent(runId)}/decisions`;
    const reply = await httpJson(c, 'POST', path, body, timeoutMs);
    if (reply.status === 202) return attempt - 1;
    if ((reply.status !== 503 && reply.status !== 429) || attempt >= 20)
      throw new BenchError(`POST ${path}: HTTP ${reply.status} ${reply.text.slice(0, 200)}`);
    await sleep(200 * attempt);
  }
}

export interface Resumed {
  /** POST decisions → its 202. */
  readonly to202Ms: number;
  /** POST decisions → the first frame of the resumed run on the already open stream. */
  readonly toFirstEventMs: number;
  readonly firstEventType: string;
  /** POST decisions → the run.finished frame (status done). */
  readonly toFinishedMs: number;
  readonly received: readonly Received[];
}

/** Opens the run's stream after its last event, then approves; times the resumed run's frames. */
export async function resumeOne(
  c: Client,
  runId: string,
  ticket: Ticket,
  timeoutMs: number,
): Promise<Resumed> {
  let firstAt: number | undefined;
  const sse = await openEvents(c, runId, {
    after: ticket.lastSeq,
    timeoutMs,
    onEvent: (r) => {
      firstAt ??= r.t;
    },
  });
  const t0 = performance.now();
  await decide(c, runId, ticket, timeoutMs);
  const t202 = performance.now();
  const t1 = await sse.finished;
  await sse.ended;
  const first = sse.received[0];
  if (first === undefined || firstAt === undefined)
    throw new BenchError(`run ${runId}: no frame after the decision`);
  return {
    to202Ms: t202 - t0,
    toFirstEventMs: firstAt - t0,
    firstEventType: first.event.type,
    toFinishedMs: t1 - t0,
    received: sse.received,
  };
}
