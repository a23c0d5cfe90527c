/**
 * Issue 22 item 5: a Redis error is never the model's or a tool's failure. The model's streamed output is
 * written to Redis while the model call runs; when a write fails (here the delta append answers
 * `CLUSTERDOWN The cluster is down` once, as during a failover) the run used to end `error` with
 * `model failed: … CLUSTERDOWN …`. Now the step job fails, the queue retries it, and the run ends
 * `done` with the model's answer. Likewise a tool job whose result could not be recorded is tried
 * again later without using up the call's attempts (TOOL_ATTEMPTS=1 here: it used to become the
 * call's `tool_job_failed` result).
 */
import { Redis, ReplyError } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import { z } from 'zod';
import { BatonRuntime } from '@baton/runtime';
import { BatonWorker } from '@baton/worker';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/**
 * A real client whose script `script` (a run append, the lease acquire that records a tool's result) fails once with a
 * cluster's CLUSTERDOWN reply, on its first call after `arm()`.
 */
function clientFailingOnce(
  url: string,
  script: string,
): {
  client: Redis;
  arm: () => void;
  failed: () => number;
} {
  const client = new Redis(url, { maxRetriesPerRequest: null });
  let armed = false;
  let failures = 0;
  const define = client.defineCommand.bind(client);
  client.defineCommand = (name, definition) => {
    define(name, definition);
    if (!name.startsWith(script)) return;
    const commands = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const real = commands[name]!;
    commands[name] = async (...args: unknown[]) => {
      if (armed) {
        armed = false;
        failures += 1;
        throw new (ReplyError as new (message: string) => Error)('CLUSTERDOWN The cluster is down');
      }
      return real.apply(client, args);
    };
  };
  return { client, arm: () => void (armed = true), failed: () => failures };
}

/** A worker on `redis` runs one run of `agent` from another client: its final checkpoint and events. */
async function runToTheEnd(
  config: ReturnType<typeof testConfig>,
  agent: AgentDefinition,
  redis: Redis,
  content: string,
) {
  const worker = new BatonWorker({ config, agents: [agent], logger: silentLogger, redis });
  await worker.start();
  cleanups.push(() => worker.stop(500));
  const client = new BatonRuntime({ config, logger: silentLogger });
  cleanups.push(() => client.close());
  const created = await client.service.createRun('t1', {
    agent: agent.name,
    input: { messages: [{ role: 'user', content }] },
  });
  const checkpoint = await waitFor(
    async () => {
      const stored = await client.store.load(created.runId);
      return stored?.checkpoint.status === 'done' ? stored.checkpoint : null;
    },
    20_000,
    'the run to finish',
  );
  return { cp: checkpoint, events: await client.store.readEvents(created.runId) };
}

describe('a Redis error during inference', () => {
  it('is retried as a step, never recorded as the model failing', async () => {
    const url = inject('redisUrl');
    const prefix = testPrefix();
    const config = testConfig(url, prefix);
    const faulty = clientFailingOnce(url, 'batonRunAppend');
    cleanups.push(() => faulty.client.quit());
    let calls = 0;
    const answer = 'the answer, streamed in several words';
    const agent: AgentDefinition = {
      name: 'flaky-store',
      model: new ScriptedModel(() => {
        calls += 1;
        // The first call's first delta append meets the failing cluster.
        if (calls === 1) faulty.arm();
        return { text: answer };
      }),
      tools: [],
    };
    const { cp, events } = await runToTheEnd(config, agent, faulty.client, 'hello');
    expect(faulty.failed()).toBe(1);
    expect(calls).toBe(2); // the step ran again: the model was asked once more
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const last = cp.messages.at(-1);
    expect(JSON.stringify(last)).toContain(answer);
    expect(events.map((e) => e.type)).not.toContain('model.retry');
    expect(JSON.stringify(events)).not.toMatch(/model failed|CLUSTERDOWN/);
  });

  it('a tool job whose result Redis refused is tried again, not failed', async () => {
    const url = inject('redisUrl');
    const config = testConfig(url, testPrefix(), { TOOL_ATTEMPTS: '1' });
    // The script that records a tool job's result as it tries the run's lease (leaseAndLoad).
    const faulty = clientFailingOnce(url, 'batonLeaseAcquireLoad');
    cleanups.push(() => faulty.client.quit());
    let executed = 0;
    const lookup = defineTool({
      name: 'lookup',
      description: 'looks something up',
      inputSchema: z.object({}),
      execute: async () => {
        executed += 1;
        // Recording the first execution's result meets the failing cluster.
        if (executed === 1) faulty.arm();
        return toolResult.success({ found: 'it' });
      },
    });
    const agent: AgentDefinition = {
      name: 'flaky-tool-store',
      executionMode: 'parallel_streaming',
      model: new ScriptedModel([{ toolCalls: [{ name: 'lookup' }] }, { text: 'found it' }]),
      tools: [lookup],
    };
    const { cp, events } = await runToTheEnd(config, agent, faulty.client, 'look it up');
    expect(faulty.failed()).toBe(1);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    // The model got the tool's own output, not a failure.
    const messages = JSON.stringify(cp.messages);
    expect(messages).toContain('"found":"it"');
    expect(messages).not.toMatch(/tool_job_failed|could not be run/);
    // Its result was never recorded the first time: the retry records the result this process
    // held, and the tool does not run a second time (it did before, 2; the failover test counted
    // such doubles as duplicated executions).
    expect(executed).toBe(1);
    expect(JSON.stringify(events)).not.toMatch(/tool_job_failed|CLUSTERDOWN/);
  });
});
