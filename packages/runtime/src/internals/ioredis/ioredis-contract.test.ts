/**
 * The contract between Baton and ioredis' internals (this folder), on a real Redis: the command
 * timer command-timeout.ts replaces, the socket write-coalescing.ts patches, the connector and
 * sendCommand slot-owner-client.ts builds on, the Cluster method fail-fast-cluster.ts overrides.
 * An upgrade that changes any of them fails here instead of as 503s or lost replies. (The cluster
 * paths run end to end in the cluster project: test/cluster/cluster-reply-pairing.test.ts,
 * cluster-failover.test.ts.)
 */
import { connect, Socket } from 'node:net';
import { AbstractConnector, Cluster, Command, Redis, type RedisOptions } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { installCommandTimeoutAfterPoll } from './command-timeout.ts';

const url = new URL(inject('redisUrl'));
const clients: Redis[] = [];

afterAll(() => {
  for (const c of clients) c.disconnect();
});

function client(opts: RedisOptions = {}): Redis {
  const redis = new Redis(url.href, opts);
  clients.push(redis);
  return redis;
}

interface TimedCommand {
  setTimeout(ms: number): void;
  _commandTimeoutTimer?: unknown;
  isSettled: boolean;
}
const commandProto = Command.prototype as unknown as TimedCommand;

describe("ioredis' command timer (command-timeout.ts)", () => {
  it('times a command through Command#setTimeout, and clears _commandTimeoutTimer on its reply', async () => {
    installCommandTimeoutAfterPoll();
    const installed = commandProto.setTimeout;
    const timed: [TimedCommand, number][] = [];
    commandProto.setTimeout = function (this: TimedCommand, ms: number): void {
      timed.push([this, ms]);
      installed.call(this, ms);
    };
    try {
      const redis = client({ commandTimeout: 200 });
      expect(await redis.echo('a')).toBe('a');
    } finally {
      commandProto.setTimeout = installed;
    }
    const echo = timed.find(([c]) => (c as unknown as Command).name === 'echo');
    expect(echo?.[1]).toBe(200);
    expect(echo?.[0].isSettled).toBe(true);
    expect(echo?.[0]._commandTimeoutTimer).toBeUndefined();
  });

  it('rejects an unanswered command through its reject(), after the timer', async () => {
    installCommandTimeoutAfterPoll();
    const command = new Command('get', ['never-sent']);
    (command as unknown as TimedCommand).setTimeout(5);
    await expect(command.promise).rejects.toThrow('Command timed out');
    expect((command as unknown as TimedCommand).isSettled).toBe(true);
  });
});

describe("ioredis' connection socket (write-coalescing.ts)", () => {
  it('writes commands on client.stream, a new socket each connect, announced by "connect"', async () => {
    const redis = client();
    await redis.ping();
    const first = (redis as unknown as { stream: Socket }).stream;
    expect(first).toBeInstanceOf(Socket);
    let writes = 0;
    const write = first.write.bind(first) as (...args: unknown[]) => boolean;
    first.write = (...args: unknown[]): boolean => {
      writes += 1;
      return write(...args);
    };
    expect(await redis.echo('x')).toBe('x');
    expect(writes).toBeGreaterThan(0);
    const connected = new Promise<Socket>((resolve) =>
      redis.once('connect', () => resolve((redis as unknown as { stream: Socket }).stream)),
    );
    redis.disconnect(true);
    const second = await connected;
    expect(second).not.toBe(first);
    expect(await redis.echo('y')).toBe('y');
  });
});

describe("ioredis' connector and sendCommand (slot-owner-client.ts, fail-fast-cluster.ts)", () => {
  it('connects through a Connector subclass of AbstractConnector, on the socket it returns', async () => {
    let connects = 0;
    class Direct extends AbstractConnector {
      constructor(options: unknown) {
        super((options as RedisOptions).disconnectTimeout ?? 2_000);
      }
      async connect(): Promise<Socket> {
        connects += 1;
        this.connecting = true;
        const stream = connect({ host: url.hostname, port: Number(url.port) });
        stream.once('error', (err: Error) => {
          this.firstError = err;
        });
        this.stream = stream;
        return stream;
      }
    }
    const redis = client({ Connector: Direct });
    expect(await redis.ping()).toBe('PONG');
    expect(connects).toBe(1);
  });

  it("hands every command, a pipeline's too, to an overridden sendCommand with its promise", async () => {
    const seen: string[] = [];
    class Watching extends Redis {
      override sendCommand(command: Parameters<Redis['sendCommand']>[0], stream?: never): unknown {
        seen.push(command.name);
        expect(command.promise).toBeInstanceOf(Promise);
        expect(typeof command.reject).toBe('function');
        return super.sendCommand(command, stream);
      }
    }
    const redis = new Watching(url.href);
    clients.push(redis);
    // Commands sent before the connection is ready pass here twice (queued, then flushed).
    await redis.ping();
    seen.length = 0;
    await redis.echo('one');
    await redis.pipeline().echo('a').echo('b').exec();
    expect(seen.filter((n) => n === 'echo')).toHaveLength(3);
  });

  it('keeps the Cluster members the subclasses use', () => {
    expect(typeof Cluster.prototype.sendCommand).toBe('function');
    expect(typeof Cluster.prototype.refreshSlotsCache).toBe('function');
    const cluster = new Cluster([{ host: url.hostname, port: Number(url.port) }], {
      lazyConnect: true,
      redisOptions: { connectionName: 'contract' },
    });
    expect(Array.isArray(cluster.slots)).toBe(true);
    expect(cluster.options.redisOptions?.connectionName).toBe('contract');
    cluster.disconnect();
  });
});
