import { DelayedError, type Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { ToolProcessor } from './tool-processor.ts';
import type { WorkerDeps } from './worker-deps.ts';

const data = { runId: 'run-1', toolCallId: 'call-1', attempt: 1 };

/**
 * A processor whose Redis answers a lookup with the run as `calls()` has it, and fails every
 * write (the tool's result cannot be recorded): the shape of a failover between a tool's end
 * and its record.
 */
function processorOnFailingRedis(calls: () => Record<string, unknown>): ToolProcessor {
  const log = { debug() {}, info() {}, warn() {}, child: () => log };
  const deps = {
    logger: log,
    clock: { now: () => 1_000, sleep: async () => {} },
    aborts: { track: () => ({ signal: new AbortController().signal, done() {} }) },
    registry: { engine: () => ({ ctx: { tools: { get: () => undefined } } }) },
    mailbox: {
      lookup: async () => ({ kind: 'run', data: {}, version: 1 }),
      recordFirst: () => {
        throw new Error('Connection is closed.');
      },
    },
    store: {
      decodeStored: () => ({
        checkpoint: {
          identity: { runId: data.runId, agent: 'agent' },
          state: {},
          cancelRequested: false,
          calls: calls(),
        },
        version: 1,
      }),
    },
  };
  return new ToolProcessor(deps as unknown as WorkerDeps);
}

function toolJob(): Job {
  return {
    id: 'job-1',
    queueName: 'tools',
    data: { v: 1, kind: 'tool', tenantId: 't', step: 1, ...data },
    token: 'token',
    attemptsStarted: 2,
    attemptsMade: 0,
    stalledCounter: 0,
    opts: { attempts: 3 },
    moveToDelayed: async () => {},
  } as unknown as Job;
}

function held(processor: ToolProcessor): Map<string, unknown> {
  return (processor as unknown as { executedUnrecorded: Map<string, unknown> }).executedUnrecorded;
}

describe('ToolProcessor: results executed but not recorded', () => {
  it('lets a held result go once the record says its call moved on', async () => {
    let call: Record<string, unknown> = {
      [data.toolCallId]: {
        id: data.toolCallId,
        name: 'missing-tool',
        arguments: {},
        attempt: data.attempt,
        status: 'running',
      },
    };
    const processor = processorOnFailingRedis(() => call);
    await expect(processor.process(toolJob())).rejects.toBeInstanceOf(DelayedError);
    expect(held(processor).size).toBe(1);

    call = {}; // the call moved on (cancelled, or retried as a later attempt)
    expect(await processor.process(toolJob())).toBe('stale');
    expect(held(processor).size).toBe(0);
  });
});
