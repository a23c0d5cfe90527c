/**
 * Which part of Baton's key space a command touches, for the "hot single keys" question of a
 * Redis Cluster: keys with a run's, thread's or tenant's hash tag spread over the masters with
 * their ids; a key without an id (`agents`, `runs:active`, the reconciler's lock…) lives on one
 * master whatever the cluster's size, so its share of all commands, times the number of
 * masters, is the share of that master's load it alone causes.
 */
export function keyClass(key: string): string {
  if (key.includes('{run:')) return 'run (spread by run id)';
  if (key.includes('{thread:')) return 'thread (spread by thread)';
  if (key.includes('{tenant:')) return 'tenant index (one slot per tenant)';
  if (key.includes('{sched:')) return 'schedules of a tenant';
  if (key.includes('{idem:') || key.includes('{sse:')) return 'api per tenant';
  if (key.includes('-bull') || key.startsWith('bull:')) return 'bullmq queues';
  // A key with no hash tag: name it without its ids (one entry per kind of global key).
  return key
    .replace(/^[^:]*:/, '')
    .replace(/^agents:live:.*$/, 'agents:live:<agent>')
    .replace(/^rl:.*$/, 'rl:<limiter>');
}

/** The first key of a command as MONITOR prints it (args[0] is the command); null if none. */
export function firstKey(args: readonly string[]): string | null {
  const cmd = (args[0] ?? '').toLowerCase();
  if (cmd === 'evalsha' || cmd === 'eval' || cmd === 'fcall') {
    return Number(args[2] ?? 0) > 0 ? (args[3] ?? null) : null;
  }
  if (KEYLESS.has(cmd)) return null;
  return args[1] ?? null;
}

const KEYLESS = new Set([
  'ping',
  'info',
  'client',
  'time',
  'multi',
  'exec',
  'script',
  'function',
  'cluster',
  'select',
  'hello',
  'auth',
  'echo',
  'wait',
  'waitaof',
  'publish',
  'spublish',
  'subscribe',
  'ssubscribe',
  'psubscribe',
  'unsubscribe',
  'sunsubscribe',
  'punsubscribe',
]);
