import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RedisOutageLog, isRedisConnectionError } from './outage-log.ts';

function setup(isUp = () => false) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  const log = new RedisOutageLog({
    url: 'redis://user:s3cret@db.internal:6380/2',
    logger,
    isUp,
    remindEveryMs: 30_000,
  });
  return { lines, log, msgs: () => lines.map((l) => String(l['msg'])) };
}

const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:6380'), {
  code: 'ECONNREFUSED',
});

afterEach(() => {
  vi.useRealTimers();
});

describe('RedisOutageLog', () => {
  it('one line per outage, whatever the number of connections and attempts; reminders; one line on connect', () => {
    vi.useFakeTimers();
    const { log, lines, msgs } = setup();
    for (let i = 0; i < 50; i += 1)
      expect(log.connectionError(refused, `q${String(i % 5)}`)).toBe(true);
    expect(msgs()).toEqual([
      'cannot reach Redis at redis://user:***@db.internal:6380/2 (connect ECONNREFUSED 10.0.0.5:6380); retrying until it answers. Check REDIS_URL and that Redis runs and accepts connections there',
    ]);
    expect(JSON.stringify(lines)).not.toContain('s3cret');
    expect(JSON.stringify(lines)).not.toContain('stack');
    vi.advanceTimersByTime(65_000);
    expect(msgs().slice(1)).toEqual([
      expect.stringMatching(
        /^still cannot reach Redis at redis:\/\/user:\*\*\*@db\.internal:6380\/2 after 30 s .*REDIS_URL$/,
      ),
      expect.stringMatching(/after 60 s/),
    ]);
    log.connected();
    expect(msgs().at(-1)).toBe(
      'connected to Redis at redis://user:***@db.internal:6380/2 (unreachable for 65 s)',
    );
    vi.advanceTimersByTime(120_000);
    expect(lines).toHaveLength(4);
    // The next outage is reported again.
    log.connectionError(refused);
    expect(msgs().at(-1)).toMatch(/^cannot reach Redis/);
    log.close();
  });

  it('other errors are the caller’s to log; a blip while the main connection is up is debug; nothing after close', () => {
    let up = true;
    const { log, lines } = setup(() => up);
    expect(log.connectionError(new Error('ERR unknown command'))).toBe(false);
    expect(log.connectionError(refused)).toBe(true);
    expect(lines.map((l) => l['level'])).toEqual([20]);
    up = false;
    log.close();
    expect(log.connectionError(new Error('Connection is closed.'))).toBe(true);
    expect(lines).toHaveLength(1);
  });

  it.each([
    ['connect ECONNREFUSED 127.0.0.1:6379', true],
    ['getaddrinfo ENOTFOUND redis', true],
    ['WRONGPASS invalid username-password pair or user is disabled.', true],
    ['NOAUTH Authentication required.', true],
    ['Connection is closed.', true],
    ['ERR wrong number of arguments', false],
  ])('%s is about reaching Redis: %s', (message, expected) => {
    expect(isRedisConnectionError(new Error(message))).toBe(expected);
  });
});
