import { CheckpointSchema, readFormat } from '@baton/protocol';
import type { Checkpoint, EventBody, Message, RunEvent, RunStatus } from '@baton/protocol';
import type { StoredCheckpoint } from '@baton/core';
import { mailboxField } from '../redis/keys.ts';

/**
 * How a checkpoint becomes the fields of a run's `cp` hash and its `messages` list, and back
 * (the layout: README.md in this folder). The write scripts store what the encoders here build;
 * every reader of those fields (the run store, the lease's acquire-and-load, the mailbox lookup)
 * decodes them here.
 */

/** What a run's `cp` hash says of it without decoding the checkpoint (decodeMeta). */
export interface RunMeta {
  readonly status: RunStatus;
  readonly activity: 'active' | 'waiting' | 'done';
  readonly version: number;
  readonly tenantId: string;
  readonly threadId: string;
  /** The run's agent (whose queues its jobs go to). */
  readonly agent: string;
  readonly updatedAt: number;
  /** The job that last held the run's lease ('<queue>:<jobId>'; '' = none yet). */
  readonly driver: string;
  /** Its priority and fairness key when set (docs/fairness.md; absent: 3 and its tenant). */
  readonly priority?: number;
  readonly fairnessKey?: string;
  /** The agent version it was created on (absent: a run of a release before versions). */
  readonly agentVersion?: string;
}

/** A checkpoint read without its messages (RedisRunStore.loadHeadForTenant). */
export interface StoredHead {
  readonly checkpoint: Omit<Checkpoint, 'messages'>;
  readonly version: number;
}

/** What a follower of a run's log needs to know of it (RedisRunStore.progress). */
export interface RunProgress {
  readonly tenantId: string;
  readonly status: RunStatus;
  readonly lastSeq: number;
}

/** A run's checkpoint fields as read by a script, before decoding (decodeCheckpoint). */
export interface StoredFields {
  readonly data: string | null;
  readonly version: string | null;
  /** The run's own list: after the referenced history when `history` has a reference. */
  readonly messages: string[];
  readonly history: HistoryFields;
}

/**
 * The `cp` fields that locate a run's referenced thread history (history-reference.ts): `hist`
 * null = none, the list holds every message.
 */
export interface HistoryFields {
  readonly hist: string | null;
  readonly tenantId: string | null;
  readonly threadId: string | null;
}

/** The results on record for a run's running calls, read with its checkpoint. */
export interface AwaitedResults {
  /** Mailbox fields of the running calls when the checkpoint was written, in call order. */
  readonly fields: readonly string[];
  /** The result recorded under each field (null: none yet). */
  readonly results: readonly (string | null)[];
}

/** The `cp` fields meta() reads, in this order. */
export const META_FIELDS = [
  'status',
  'activity',
  'version',
  'tenant',
  'threadId',
  'updatedAt',
  'driver',
  'agent',
  'priority',
  'fkey',
  'aver',
] as const;

/** RunMeta from the META_FIELDS values (null when the run does not exist). */
export function decodeMeta(values: readonly (string | null | undefined)[]): RunMeta | null {
  const [
    status,
    activity,
    version,
    tenant,
    threadId,
    updatedAt,
    driver,
    agent,
    priority,
    fkey,
    aver,
  ] = values;
  if (!status || !version || !tenant) return null;
  return {
    status: status as RunStatus,
    activity: (activity ?? 'active') as RunMeta['activity'],
    version: Number(version),
    tenantId: tenant,
    threadId: threadId ?? '',
    agent: agent ?? '',
    updatedAt: Number(updatedAt),
    driver: driver ?? '',
    ...(priority ? { priority: Number(priority) } : {}),
    ...(fkey ? { fairnessKey: fkey } : {}),
    ...(aver ? { agentVersion: aver } : {}),
  };
}

/**
 * The `awaiting` field (JSON array of mailbox fields, written by every commit) with the results
 * the acquire read for them; null for a run written before the field existed.
 */
export function decodeAwaited(
  awaiting: string | null | undefined,
  recorded: (string | null)[] | null | undefined,
): AwaitedResults | null {
  return awaiting === null || awaiting === undefined || !recorded
    ? null
    : { fields: JSON.parse(awaiting) as string[], results: recorded };
}

/**
 * A decoded checkpoint (null: no such run), or why the stored one is invalid, or the newer
 * format version it has (`newer`: a newer release wrote it; left for that release).
 */
export type Decoded =
  | { readonly ok: true; readonly stored: StoredCheckpoint | null }
  | { readonly ok: false; readonly why: string; readonly newer?: number };

/**
 * The stored checkpoint from its `data` and `version` fields and its messages (JSON, or parsed
 * already by the worker's message cache); null when the run does not exist. `validate`: a full
 * CheckpointSchema parse instead of the cheap shape check. The run store turns `why` into a
 * CorruptCheckpointError.
 */
export function decodeCheckpoint(
  runId: string,
  data: string | null,
  version: string | null,
  messages: readonly string[] | { readonly parsed: readonly Message[] },
  validate: boolean,
): Decoded {
  if (data === null || version === null) return { ok: true, stored: null };
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
    // Runs stored before messages had their own list carry them inside the checkpoint.
    if (typeof parsed === 'object' && parsed !== null && !('messages' in parsed))
      (parsed as { messages: unknown[] }).messages =
        'parsed' in messages ? [...messages.parsed] : messages.map((m) => JSON.parse(m) as unknown);
  } catch {
    return { ok: false, why: 'not JSON' };
  }
  // Before the schema: a newer format may not fit this release's schema at all.
  const format = readFormat('checkpoint', (parsed as { v?: unknown } | null)?.v);
  if (format.action === 'defer') return { ok: false, why: format.reason, newer: format.version };
  if (format.action === 'refuse') return { ok: false, why: format.reason };
  let checkpoint: Checkpoint;
  if (validate) {
    const result = CheckpointSchema.safeParse(parsed);
    if (!result.success) return { ok: false, why: result.error.message };
    checkpoint = result.data;
  } else {
    const why = cheapCheck(parsed);
    if (why !== null) return { ok: false, why };
    checkpoint = parsed as Checkpoint;
  }
  if (checkpoint.identity.runId !== runId)
    return { ok: false, why: `identity.runId is ${checkpoint.identity.runId}` };
  return { ok: true, stored: { checkpoint, version: Number(version) } };
}

/**
 * Shape check without zod: enough to catch a wrong key or a foreign format version. Returns why
 * the value is not a checkpoint, or null.
 */
function cheapCheck(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const cp = value as Partial<Checkpoint>;
  if (typeof cp.identity !== 'object' || cp.identity === null) return 'no identity';
  if (typeof cp.status !== 'string' || typeof cp.phase !== 'string') return 'no status/phase';
  if (!Array.isArray(cp.messages) || typeof cp.calls !== 'object' || cp.calls === null)
    return 'no messages/calls';
  return null;
}

/** The checkpoint as stored in its hash: everything but the messages (they have their own list). */
export function checkpointData(cp: Checkpoint): string {
  return JSON.stringify({ ...cp, messages: undefined });
}

/** How many leading messages `next` shares (by identity) with `base`. */
export function sharedPrefix(base: readonly unknown[], next: readonly unknown[]): number {
  const n = Math.min(base.length, next.length);
  let i = 0;
  while (i < n && base[i] === next[i]) i += 1;
  return i;
}

/**
 * The mailbox fields of the calls that wait for a result, in call order, as a JSON array: the
 * lease acquire reads their results with the checkpoint (see RunLeases.acquireAndLoad).
 */
export function awaitingFields(cp: Checkpoint): string {
  const fields: string[] = [];
  for (const id of cp.round) {
    const call = cp.calls[id];
    if (call?.status === 'running') fields.push(mailboxField(call.id, call.attempt));
  }
  return JSON.stringify(fields);
}

/** `"runId":…,"threadId":…,"turnId":…` — the envelope ids as JSON members without braces. */
export function envelopeIds(cp: Checkpoint): string {
  const { runId, threadId, turnId } = cp.identity;
  return JSON.stringify({ runId, threadId, turnId }).slice(1, -1);
}

/** The body's JSON without its leading '{' (the script prepends the envelope). */
export function bodyTail(body: EventBody): string {
  const json = JSON.stringify(body);
  if (json === undefined || !json.startsWith('{') || json.length < 3)
    throw new Error('event body must be a non-empty object');
  return json.slice(1);
}

/**
 * The events a commit appended, as the script built them (same envelope, same `at`, seqs ending
 * at `lastSeq`). The worker's commits never read them: building them here instead of sending them
 * back from Redis saves bytes and decoding on every commit (callers that read them do so once).
 */
export function rebuiltEvents(
  env: string,
  at: string,
  bodies: readonly string[],
  lastSeq: number,
): RunEvent[] {
  return bodies.map(
    (body, i) =>
      JSON.parse(
        `{"seq":${String(lastSeq - bodies.length + 1 + i)},${env},"at":${at},${body}`,
      ) as RunEvent,
  );
}

export function parseEvents(reply: readonly unknown[], from = 2): RunEvent[] {
  const out: RunEvent[] = [];
  for (let i = from; i < reply.length; i += 1) out.push(JSON.parse(reply[i] as string) as RunEvent);
  return out;
}
