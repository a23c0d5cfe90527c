/**
 * Relaxed durability: a host crash can lose Redis's last writes (appendfsync everysec loses up to
 * a second). Simulated exactly: Redis is snapshotted, more writes are acknowledged, then it is
 * killed -9 and restarts from the snapshot, a consistent past. Nothing may then wait forever:
 * - a client that reconnects to a run's events with a Last-Event-ID the log no longer reaches
 *   gets 409 event_log_rewound (with the log's last seq), not a silent stream of different events;
 * - a decision that was lost can be sent again (same id) and the run goes on;
 * - a run whose lost decision nobody resends ends after RUN_MAX_WAIT_SECONDS with an error that
 *   says so, instead of waiting forever.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { DecisionsResponse, ErrorBody, RunSnapshot } from '@baton/protocol';
import { eventsOf, type ApiClient } from '@baton/testing/api-harness';
import { startProcessStack, type ProcessStack } from '@baton/testing/process-stack';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import { waitFor } from '@baton/testing/worker-harness';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';

let redis: RedisProcess;
let stack: ProcessStack;
let client: ApiClient;

beforeAll(async () => {
  redis = await startRedisProcess({ aof: 'off' });
  stack = await startProcessStack(redis.url, { workerEnv: { RUN_MAX_WAIT_SECONDS: '3' } });
  client = stack.client;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await stopAllWorkerProcesses();
  await redis?.stop();
});

async function status(runId: string, wanted: string): Promise<RunSnapshot> {
  return waitFor(
    async () => {
      const r = await client.get<RunSnapshot>(`/v1/runs/${runId}`);
      return r.status === 200 && r.body.status === wanted ? r.body : null;
    },
    20_000,
    `run ${runId} to be ${wanted}`,
  );
}

describe('writes lost in a Redis crash (relaxed durability)', () => {
  it('are detected: rewound streams say so, decisions can be resent, nothing waits forever', async () => {
    const a = await client.createRun('assistant', 'deploy please');
    const b = await client.createRun('assistant', 'deploy please');
    const waitingA = await status(a.runId, 'waiting');
    const waitingB = await status(b.runId, 'waiting');

    // The past Redis will come back to.
    const admin = new Redis(redis.url);
    await admin.save();
    await admin.quit();

    const decide = (runId: string, snapshot: RunSnapshot, id: string) =>
      client.post<DecisionsResponse>(`/v1/runs/${runId}/decisions`, {
        decisions: [
          { decisionId: id, toolCallId: snapshot.await!.calls[0]!.toolCallId, action: 'resume' },
        ],
      });
    expect((await decide(a.runId, waitingA, 'd-a')).status).toBe(202);
    expect((await decide(b.runId, waitingB, 'd-b')).status).toBe(202);
    await status(a.runId, 'done');
    const seen = await client.stream(`/v1/runs/${a.runId}/events`);
    const lastSeen = Math.max(...eventsOf(seen).map((e) => e.seq));

    await redis.kill('SIGKILL');
    await redis.start();

    // The log is back where the snapshot left it: the client is told, with where to resume.
    const rewound = await waitFor(
      async () => {
        const r = await client.get<ErrorBody>(`/v1/runs/${a.runId}/events`, {
          'last-event-id': String(lastSeen),
        });
        return r.status === 503 ? null : r;
      },
      10_000,
      'the API to reach Redis again',
    );
    expect(rewound.status).toBe(409);
    expect(rewound.body.error.code).toBe('event_log_rewound');
    expect((rewound.body.error.details as { lastSeq: number }).lastSeq).toBeLessThan(lastSeen);

    // The lost decision is simply sent again, and the run finishes.
    expect((await client.get<RunSnapshot>(`/v1/runs/${a.runId}`)).body.status).toBe('waiting');
    const again = await decide(a.runId, waitingA, 'd-a');
    expect(again.status).toBe(202);
    expect(again.body.accepted).toEqual(['d-a']);
    expect((await status(a.runId, 'done')).termination).toEqual({ kind: 'natural_end' });

    // Nobody resends B's: it does not wait forever.
    const ended = await status(b.runId, 'done');
    expect(ended.termination?.kind).toBe('error');
    expect(ended.termination?.kind === 'error' && ended.termination.message).toMatch(
      /no decision arrived within 3 s/,
    );
  }, 60_000);
});
