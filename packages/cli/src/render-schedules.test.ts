import type { RunWebhooksResponse, ScheduleDetail } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { plain } from './render.ts';
import { cadence, renderSchedule, renderScheduleList } from './render-schedules.ts';
import { renderWebhooks } from './render-webhooks.ts';

const schedule: ScheduleDetail = {
  scheduleId: 'sch-1',
  name: 'mornings',
  agent: 'assistant',
  input: { messages: [{ role: 'user', content: 'weather?' }] },
  cron: '0 9 * * 1-5',
  timezone: 'Europe/Paris',
  state: 'paused',
  version: 2,
  createdAt: 0,
  updatedAt: 0,
  nextFireAt: null,
  firings: 1,
  lastFiredAt: 1_000,
  links: { self: '/s', runs: '/s/runs', pause: '/s/pause', resume: '/s/resume' },
  recentFirings: [
    { scheduledFor: 1_000, firedAt: 1_000, outcome: 'created', runId: 'run-1' },
    {
      scheduledFor: 2_000,
      firedAt: 2_000,
      outcome: 'failed',
      error: { code: 'unknown_agent', message: 'no such agent' },
    },
  ],
};

describe('schedule and webhook rendering', () => {
  it('says when a schedule fires', () => {
    expect(cadence(schedule)).toBe('cron "0 9 * * 1-5" Europe/Paris');
    expect(cadence({ everyMs: 30_000 })).toBe('every 30000 ms');
  });

  it('lists schedules one per line, and details one with its firings', () => {
    const list = renderScheduleList([schedule], plain);
    expect(list).toMatch(
      /^sch-1 +paused +assistant +cron "0 9 \* \* 1-5" Europe\/Paris {2}next - {2}mornings\n$/,
    );
    expect(renderScheduleList([], plain)).toBe('no schedules\n');
    const detail = renderSchedule(schedule, plain);
    expect(detail).toContain('sch-1  paused  agent assistant  mornings');
    expect(detail).toContain('message: weather?');
    expect(detail).toContain('created   run-1');
    expect(detail).toContain('unknown_agent: no such agent');
  });

  it("shows a run's deliveries attempt by attempt", () => {
    const log: RunWebhooksResponse = {
      runId: 'run-1',
      endpoints: [{ endpoint: 'run', url: 'https://example.com/h', events: ['run.finished'] }],
      deliveries: [
        {
          webhookId: 'msg_1',
          endpoint: 'run',
          type: 'run.finished',
          seq: 9,
          status: 'delivered',
          attempts: [
            { attempt: 1, at: 0, durationMs: 12, error: 'timeout', nextRetryAt: 1_000 },
            { attempt: 2, at: 1_000, durationMs: 8, statusCode: 204 },
          ],
        },
      ],
    };
    const text = renderWebhooks(log, plain);
    expect(text).toContain('run https://example.com/h  run.finished');
    expect(text).toMatch(/run\.finished +seq 9 +run +delivered {2}msg_1/);
    expect(text).toContain(
      '#1 1970-01-01T00:00:00.000Z timeout (12 ms, retry at 1970-01-01T00:00:01.000Z)',
    );
    expect(text).toContain('#2 1970-01-01T00:00:01.000Z HTTP 204 (8 ms)');
    expect(renderWebhooks({ runId: 'r', endpoints: [], deliveries: [] }, plain)).toBe(
      'no webhook for run r\n',
    );
  });
});
