import type { JsonValue } from '@baton/protocol';
import { InvalidArgumentError, Option } from 'commander';

export function parseJson(value: string): JsonValue {
  try {
    return JSON.parse(value) as JsonValue;
  } catch {
    throw new InvalidArgumentError('not valid JSON');
  }
}

export function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('not a non-negative integer');
  return n;
}

/** `--until`, shared by the commands that follow a run. */
export function untilOption(note = ''): Option {
  return new Option(
    '--until <when>',
    `stop when the run tree is done, or also when any run of it waits for a decision${note === '' ? '' : ` ${note}`}`,
  )
    .choices(['done', 'suspended'])
    .default('done');
}

const DURATION_UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** `--every`: "30s", "5m", "1h", "1d", "250ms", or a bare number of milliseconds. */
export function parseDuration(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!match?.[1]) throw new InvalidArgumentError('not a duration (e.g. 30s, 5m, 1h, 1d or 1500)');
  const ms = Number(match[1]) * DURATION_UNITS[match[2] ?? 'ms']!;
  if (!Number.isInteger(ms)) throw new InvalidArgumentError('not a whole number of milliseconds');
  return ms;
}

/** `--priority <1-5>`: a run's dispatch priority (1 first, 5 last; default 3). */
export function parsePriority(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 5)
    throw new InvalidArgumentError('a whole number from 1 (highest) to 5 (lowest)');
  return n;
}

/** The run options `--priority` and `--fairness-key` set (none when neither was given). */
export function fairnessRunOptions(opts: { priority?: number; fairnessKey?: string }): {
  options?: { priority?: number; fairnessKey?: string };
} {
  const options = {
    ...(opts.priority === undefined ? {} : { priority: opts.priority }),
    ...(opts.fairnessKey === undefined ? {} : { fairnessKey: opts.fairnessKey }),
  };
  return Object.keys(options).length === 0 ? {} : { options };
}
