/**
 * 1,000 random forks (FORK_TEST_COUNT): a random finished or cancelled run, a random atSeq
 * anywhere in its log (inside parallel and sequential tool rounds, at suspensions, after its
 * end with new input). Each fork's log opens with the original's events 1…atSeq, byte for byte
 * (bodies; the envelope is the fork's), it finishes, and no call whose result the original had
 * logged by atSeq ran again under the fork (every tool execution is counted per run and call).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Checkpoint, RunEvent } from '@baton/protocol';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { waitFor } from '@baton/testing/worker-harness';
import {
  FORK_AGENTS,
  ToolProbe,
  bodyJson,
  callsSettledBy,
  forkAgents,
} from '@baton/testing/fork-agents';

const FORKS = Number(process.env['FORK_TEST_COUNT'] ?? 1_000);
const ORIGINALS = 24;
const CONCURRENCY = 24;

const probe = new ToolProbe();
let c: ApiCluster;
let a: ApiClient;

beforeAll(async () => {
  c = await startApiCluster(inject('redisUrl'), forkAgents(probe), { workers: 2 });
  a = new ApiClient(c.apis[0]!.url, KEYS.a);
}, 60_000);

afterAll(async () => {
  await c.stop();
});

/** mulberry32: the same forks on every run of the test (FORK_TEST_SEED to vary). */
function prng(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4_294_967_296;
  };
}

async function load(runId: string): Promise<Checkpoint> {
  const stored = await c.h.client.store.load(runId);
  if (!stored) throw new Error(`run ${runId} is gone`);
  return stored.checkpoint;
}

/** Drives a run to its end: every call it waits for is approved, as often as it waits. */
async function finish(runId: string): Promise<Checkpoint> {
  for (;;) {
    const cp = await waitFor(
      async () => {
        const now = await load(runId);
        return now.status === 'waiting' || now.status === 'done' ? now : null;
      },
      60_000,
      `run ${runId} to wait or end`,
    );
    if (cp.status === 'done') return cp;
    const suspended = Object.values(cp.calls).filter((x) => x.status === 'suspended');
    const r = await a.post(`/v1/runs/${runId}/decisions`, {
      decisions: suspended.map((x) => ({ toolCallId: x.id, action: 'resume' })),
    });
    if (r.status !== 202)
      throw new Error(
        `decisions for ${runId}: ${String(r.status)} ${JSON.stringify(r.body)} ${JSON.stringify(cp.calls)} ${cp.executionMode}`,
      );
    await waitFor(
      async () => (await load(runId)).status !== 'waiting',
      60_000,
      `run ${runId} to resume`,
    );
  }
}

interface Original {
  readonly runId: string;
  readonly log: RunEvent[];
  readonly min: number;
}

async function original(i: number): Promise<Original> {
  const [agent] = FORK_AGENTS[i % FORK_AGENTS.length]!;
  const { runId } = await a.createRun(agent, `original ${String(i)}`);
  if (i % 4 === 3) {
    // Some originals are cancelled while they wait: their logs end in a cancel.
    await waitFor(async () => (await load(runId)).status === 'waiting', 30_000, 'a wait');
    await a.post(`/v1/runs/${runId}/cancel`);
    await waitFor(async () => (await load(runId)).status === 'done', 30_000, 'the cancel');
  } else await finish(runId);
  const log = await c.h.client.service.events('tenant-a', runId);
  const started = log.filter((e) => e.type === 'run.started' || e.type === 'message.input');
  return { runId, log, min: started.at(-1)!.seq };
}

async function pool<T>(items: readonly T[], n: number, fn: (t: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

describe('random forks', () => {
  it(`${String(FORKS)} forks: same prefix byte for byte, no settled call executed again`, async () => {
    const originals = await Promise.all(Array.from({ length: ORIGINALS }, (_, i) => original(i)));
    const rand = prng(Number(process.env['FORK_TEST_SEED'] ?? 34));
    const plans = Array.from({ length: FORKS }, () => {
      const o = originals[Math.floor(rand() * originals.length)]!;
      const last = o.log.at(-1)!.seq;
      return { o, atSeq: o.min + Math.floor(rand() * (last - o.min + 1)) };
    });
    const seen = { inRound: 0, atSuspension: 0, afterEnd: 0, parallel: 0 };
    const violations: string[] = [];
    await pool(plans, CONCURRENCY, async ({ o, atSeq }) => {
      const prefix = o.log.filter((e) => e.seq <= atSeq);
      const ended = prefix.some((e) => e.type === 'run.status' && e.to === 'done');
      const at = prefix.at(-1)!;
      const openRound =
        prefix.findLast((e) => e.type === 'tool_call.created' || e.type === 'step.finished')
          ?.type === 'tool_call.created';
      if (ended) seen.afterEnd += 1;
      else if (
        at.type === 'tool_call.suspended' ||
        (at.type === 'run.finished' && at.status === 'waiting')
      )
        seen.atSuspension += 1;
      if (openRound && !ended) {
        seen.inRound += 1;
        if (o.log[0]?.type === 'run.created' && o.log[0].executionMode !== 'sequential')
          seen.parallel += 1;
      }
      const r = await a.post<{ runId: string }>(`/v1/runs/${o.runId}/fork`, {
        atSeq,
        ...(ended ? { input: { messages: [{ role: 'user', content: 'again' }] } } : {}),
      });
      if (r.status !== 202) {
        violations.push(
          `fork ${o.runId}@${String(atSeq)}: ${String(r.status)} ${JSON.stringify(r.body)}`,
        );
        return;
      }
      const fork = r.body.runId;
      await finish(fork);
      const forkLog = await c.h.client.service.events('tenant-a', fork);
      const same =
        forkLog.slice(0, atSeq).map(bodyJson).join('\n') === prefix.map(bodyJson).join('\n');
      if (!same) violations.push(`fork ${fork} of ${o.runId}@${String(atSeq)}: prefix differs`);
      for (const id of callsSettledBy(o.log, atSeq))
        if (probe.count(fork, id) > 0)
          violations.push(`fork ${fork} of ${o.runId}@${String(atSeq)}: ${id} ran again`);
    });
    expect(violations).toEqual([]);
    // The random points covered what the acceptance names (for the full volume).
    if (FORKS >= 200) {
      expect(seen.inRound).toBeGreaterThan(0);
      expect(seen.parallel).toBeGreaterThan(0);
      expect(seen.atSuspension).toBeGreaterThan(0);
      expect(seen.afterEnd).toBeGreaterThan(0);
    }
    // The originals are untouched.
    for (const o of originals) {
      const now = await c.h.client.service.events('tenant-a', o.runId);
      expect(now.map(bodyJson)).toEqual(o.log.map(bodyJson));
    }
    console.log(`[fork-random] ${String(FORKS)} forks:`, JSON.stringify(seen));
  }, 600_000);
});
