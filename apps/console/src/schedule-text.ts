import type { Schedule } from '@baton/protocol';

/** "every 30 s" / "every 1.5 h" for an interval in milliseconds. */
export function everyText(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1_000, 's'],
  ];
  for (const [size, unit] of units)
    if (ms >= size) return `every ${String(Math.round((ms / size) * 100) / 100)} ${unit}`;
  return `every ${String(ms)} ms`;
}

/** When a schedule fires, in one phrase: its cron expression and zone, or its interval. */
export function cadenceText(s: Pick<Schedule, 'cron' | 'timezone' | 'everyMs'>): string {
  if (s.cron !== undefined) return `cron ${s.cron} (${s.timezone ?? 'UTC'})`;
  return s.everyMs !== undefined ? everyText(s.everyMs) : '-';
}

/** The schedule's name, else its id. */
export function scheduleLabel(s: Pick<Schedule, 'name' | 'scheduleId'>): string {
  return s.name ?? s.scheduleId;
}
