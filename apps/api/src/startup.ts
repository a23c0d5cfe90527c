import { isBatonError } from '@baton/protocol';

/**
 * The one line an operator sees when the API cannot start for a reason they can fix (bad
 * configuration, a taken port); null for anything else, which keeps its stack trace.
 */
export function operatorMessage(
  err: unknown,
  listen: { host: string; port: number },
): string | null {
  // ConfigError, a REDIS_URL that cannot be read (RedisUrlError), and a Redis of another kind
  // than REDIS_URL says (RedisTopologyError).
  if (isBatonError(err) && err.code === 'config') return err.message;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const where = `${listen.host}:${listen.port}`;
  if (code === 'EADDRINUSE')
    return `port ${listen.port} is already in use on ${listen.host} (another Baton API or another program listens there); stop it, or set PORT to a free port (PORT=0 picks one)`;
  if (code === 'EACCES')
    return `not allowed to listen on ${where} (ports below 1024 need privileges); set PORT to 1024 or above`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
    return `cannot listen on ${where}: HOST is not an address of this machine; set HOST to 0.0.0.0, 127.0.0.1 or one of its addresses`;
  return null;
}
