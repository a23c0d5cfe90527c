import { BatonError } from '@baton/protocol';

/**
 * REDIS_URL names the wrong kind of Redis (a standalone URL for a Cluster node): the process
 * refuses to start with one line naming the setting to use, instead of failing on MOVED later.
 */
export class RedisTopologyError extends BatonError<'config'> {
  constructor(message: string) {
    super('config', message);
  }
}
