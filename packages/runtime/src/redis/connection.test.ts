import { createRequire } from 'node:module';
import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isRedisUnavailable } from './connection.ts';

const require = createRequire(import.meta.url);
// Not re-exported by ioredis' index; the class its Cluster rejects with.
const { default: ClusterAllFailedError } =
  require('ioredis/built/errors/ClusterAllFailedError.js') as {
    default: new (message: string, lastNodeError: Error) => Error;
  };

/** ioredis' Error for a reply from Redis, as a Cluster passes it on. */
function reply(message: string): Error {
  return new (ReplyError as new (message: string) => Error)(message);
}

describe('isRedisUnavailable: a cluster between topologies is "Redis unavailable" (503, a step retried)', () => {
  it.each([
    ['CLUSTERDOWN', reply('CLUSTERDOWN The cluster is down')],
    ['CLUSTERDOWN (slot)', reply('CLUSTERDOWN Hash slot not served')],
    ['TRYAGAIN', reply('TRYAGAIN Multiple keys request during rehashing of slot')],
    ['MOVED', reply('MOVED 8105 127.0.0.1:7102')],
    ['ASK', reply('ASK 8105 127.0.0.1:7102')],
    [
      'redirections',
      new Error(
        'Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down',
      ),
    ],
    ['refresh', new ClusterAllFailedError('Failed to refresh slots cache.', new Error('x'))],
    ['startup', new Error('None of startup nodes is available')],
    ['not ready', new Error("Cluster isn't ready and enableOfflineQueue options is false")],
    ['closed', new Error('Connection is closed.')],
    ['timeout', new Error('Command timed out')],
    ['READONLY', reply("READONLY You can't write against a read only replica.")],
  ])('%s', (_name, error) => {
    expect(isRedisUnavailable(error)).toBe(true);
  });

  it('not what a caller or a script got wrong', () => {
    expect(isRedisUnavailable(reply('ERR wrong number of arguments for command'))).toBe(false);
    expect(isRedisUnavailable(reply("CROSSSLOT Keys in request don't hash to the same slot"))).toBe(
      false,
    );
    expect(isRedisUnavailable(new Error('model said MOVED 1 to the left'))).toBe(false);
    expect(isRedisUnavailable('CLUSTERDOWN')).toBe(false);
  });
});
