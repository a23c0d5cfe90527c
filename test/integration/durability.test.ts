/**
 * Durability made explicit. In strict mode (BATON_DURABILITY=strict) a 2xx means the write is on
 * disk: Baton refuses to start against a Redis that cannot promise that, and against one that can
 * (AOF, fsync always) a run created and a decision accepted just before Redis is killed -9 are
 * there after it restarts, and the run goes on.
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import type { RunSnapshot } from '@baton/protocol';
import { Durability } from '@baton/runtime/internal';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import { startProcessStack } from '@baton/testing/process-stack';
import { testPrefix, waitFor } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const cleanups: (() => Promise<void>)[] = [];

afterAll(async () => {
  await stopAllWorkerProcesses();
  for (const c of cleanups.reverse()) await c();
});

describe('strict durability', () => {
  it('refuses a Redis without fsync-always AOF, naming the setting (check and worker start-up)', async () => {
    const plain = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
    cleanups.push(async () => void (await plain.quit()));
    await expect(new Durability(plain, 'strict').check()).rejects.toThrow(
      /appendonly yes.*appendfsync always.*BATON_DURABILITY=relaxed/s,
    );
    expect(await new Durability(plain, 'relaxed').check()).toBe('none');

    const worker = await spawnWorker({
      redisUrl: inject('redisUrl'),
      prefix: testPrefix(),
      env: { BATON_DURABILITY: 'strict' },
    }).catch((error: unknown) => error);
    // It exited before READY with one line that says what to change.
    expect(String(worker)).toMatch(/baton-worker: BATON_DURABILITY=strict needs Redis/);
  });

  it('a run and a decision acknowledged just before kill -9 of Redis survive its restart', async () => {
    const redis: RedisProcess = await startRedisProcess({ aof: 'always' });
    cleanups.push(() => redis.stop());
    const stack = await startProcessStack(redis.url, { env: { BATON_DURABILITY: 'strict' } });
    cleanups.push(() => stack.stop());
    expect(stack.api.api.runtime.durability.strategy).toBe('fsync-always');
    const { client } = stack;

    // Acknowledged, then Redis dies at once.
    const created = await client.createRun('assistant', 'deploy please');
    await redis.kill('SIGKILL');
    await redis.start();
    const snapshot = await waitFor(
      async () => {
        const r = await client.get<RunSnapshot>(`/v1/runs/${created.runId}`);
        return r.status === 200 && r.body.status === 'waiting' ? r.body : null;
      },
      20_000,
      'the run acknowledged before the crash to reach its approval',
    );

    const decided = await client.post(`/v1/runs/${created.runId}/decisions`, {
      decisions: [
        {
          decisionId: 'd-durable',
          toolCallId: snapshot.await!.calls[0]!.toolCallId,
          action: 'resume',
        },
      ],
    });
    expect(decided.status).toBe(202);
    await redis.kill('SIGKILL');
    await redis.start();
    await waitFor(
      async () => {
        const r = await client.get<RunSnapshot>(`/v1/runs/${created.runId}`);
        return r.status === 200 && r.body.status === 'done' ? true : null;
      },
      20_000,
      'the decision acknowledged before the crash to finish the run',
    );
    const done = (await client.get<RunSnapshot>(`/v1/runs/${created.runId}`)).body;
    expect(done.decisions.map((d) => d.decisionId)).toContain('d-durable');
    expect(done.termination).toEqual({ kind: 'natural_end' });
  }, 60_000);
});
