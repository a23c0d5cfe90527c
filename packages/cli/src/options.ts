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
export function untilOption(): Option {
  return new Option(
    '--until <when>',
    'stop when the run is done, or also when it waits for a decision',
  )
    .choices(['done', 'suspended'])
    .default('done');
}
