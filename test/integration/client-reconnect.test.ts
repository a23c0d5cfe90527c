import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonClient, type ReconnectInfo } from '@baton/client';
import { ScriptedModel, type AgentDefinition } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { spawnApi, stopAllApiProcesses, type ApiProcess } from '@baton/testing/api-process';
import { startTcpSwitch, type TcpSwitch } from '@baton/testing/tcp-switch';
import { startHarness, type Harness } from '@baton/testing/worker-harness';

const KEY = 'reconnect-tenant-key-1';
const TRIALS = 100;

// A model that talks for minutes, one small delta every 20 ms: the stream is always mid-run when
// an API process dies. The test cancels the run once every trial is done.
const talker: AgentDefinition = {
  name: 'talker',
  model: new ScriptedModel([{ text: 'ab'.repeat(30_000), chunkSize: 2, chunkDelayMs: 20 }], {
    clock: systemClock,
  }),
  tools: [],
  stopConditions: [{ type: 'max_rounds', rounds: 1 }],
};

/**
 * API processes behind a TCP front door. `kill()` SIGKILLs the process that serves the stream
 * and points the door at a standby that is already listening; replacements start in the
 * background, so a trial costs a reconnect, not a process start.
 */
class ApiPool {
  readonly standby: ApiProcess[] = [];
  current!: ApiProcess;
  door!: TcpSwitch;
  spawned = 0;
  private starting = 0;
  private readonly waiters: (() => void)[] = [];
  private readonly redisUrl: string;
  private readonly prefix: string;
  private remaining: number;

  constructor(redisUrl: string, prefix: string, processes: number) {
    this.redisUrl = redisUrl;
    this.prefix = prefix;
    this.remaining = processes;
  }

  async start(): Promise<void> {
    this.current = await this.spawn();
    this.door = await startTcpSwitch(this.current.port);
    this.refill();
  }

  private async spawn(): Promise<ApiProcess> {
    this.remaining -= 1;
    this.spawned += 1;
    return spawnApi({ redisUrl: this.redisUrl, prefix: this.prefix, keys: `t:${KEY}` });
  }

  private refill(): void {
    // Two starts at a time keep the standby list ahead of the trials on a 2-core machine.
    while (this.starting < 2 && this.standby.length + this.starting < 3 && this.remaining > 0) {
      this.starting += 1;
      void this.spawn().then((p) => {
        this.starting -= 1;
        this.standby.push(p);
        this.waiters.splice(0).forEach((w) => w());
        this.refill();
      });
    }
  }

  /** Kills the serving process; new connections go to the next one. */
  async kill(): Promise<void> {
    while (this.standby.length === 0) await new Promise<void>((r) => this.waiters.push(r));
    const next = this.standby.shift()!;
    const dead = this.current;
    this.current = next;
    this.door.target = next.port;
    dead.kill('SIGKILL');
    await dead.exited;
    this.refill();
  }
}

describe('client stream: exactly once while API processes are killed mid-stream', () => {
  let h: Harness;
  let pool: ApiPool;
  beforeAll(async () => {
    h = await startHarness(inject('redisUrl'), [talker]);
    pool = new ApiPool(inject('redisUrl'), h.prefix, TRIALS + 1);
    await pool.start();
  }, 60_000);
  afterAll(async () => {
    await pool.door?.close();
    await stopAllApiProcesses();
    await h.stop();
  });

  it(`${TRIALS} kills of the serving API process: no gap, no duplicate, same events as the log`, async () => {
    const client = new BatonClient({ baseUrl: pool.door.url, apiKey: KEY });
    const { runId } = await client.runs.create({
      agent: 'talker',
      input: { messages: [{ role: 'user', content: 'talk' }] },
    });
    const reconnects: ReconnectInfo[] = [];
    const stream = client.runs.stream(runId, {
      reconnect: { initialDelayMs: 5, maxDelayMs: 50, maxAttempts: 200 },
      onReconnect: (info) => reconnects.push(info),
    });
    const seen: RunEvent[] = [];
    let kills = 0;
    let onEvent: (() => void) | undefined;
    const consumer = (async () => {
      for await (const event of stream) {
        seen.push(event);
        onEvent?.();
      }
    })();
    const nextEvent = (): Promise<void> => new Promise((r) => (onEvent = r));

    while (kills < TRIALS) {
      // Mid-stream: at least one event arrived on the current connection since the last kill.
      await nextEvent();
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 20)));
      await pool.kill();
      kills += 1;
    }
    await nextEvent();
    await client.runs.cancel(runId);
    await consumer;

    const log = await h.client.store.readEvents(runId);
    expect(seen.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    expect(seen).toEqual(log);
    expect(seen.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
    expect(seen.filter((e) => e.type === 'text.delta').length).toBeGreaterThan(TRIALS);
    // Every kill broke the stream and was healed by a reconnect.
    expect(stream.reconnects).toBeGreaterThanOrEqual(TRIALS);
    expect(reconnects.length).toBe(stream.reconnects);
    expect(pool.spawned).toBeGreaterThanOrEqual(TRIALS + 1);
    expect(pool.door.accepted()).toBeGreaterThan(TRIALS);
    // The time goes to starting 101 API processes, two at a time: 107-117 s on this 2-core
    // machine on a slow day, so 120 s was a guard that a slow host, not a hang, could trip.
  }, 240_000);
});
