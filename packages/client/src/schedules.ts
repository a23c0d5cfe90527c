import {
  RunPageSchema,
  ScheduleDetailSchema,
  SchedulePageSchema,
  type CreateScheduleRequest,
  type RunPage,
  type ScheduleDetail,
  type SchedulePage,
} from '@baton/protocol';
import type { RequestOptions, Transport } from './transport.ts';

export interface CreateScheduleOptions extends RequestOptions {
  /** Same key + same body returns the same schedule; another body is `idempotency_conflict`. */
  readonly idempotencyKey?: string;
}

export interface PageQuery {
  /** Page size, 1..100 (default 20). */
  readonly limit?: number;
  /** `nextCursor` of the previous page. */
  readonly cursor?: string;
}

/** A created schedule; `replayed` is true when an Idempotency-Key returned an existing one. */
export type CreatedSchedule = ScheduleDetail & { readonly replayed: boolean };

const enc = encodeURIComponent;

/** Scheduled runs: a cron expression (with a time zone) or an interval that creates runs. */
export class SchedulesApi {
  private readonly t: Transport;
  constructor(transport: Transport) {
    this.t = transport;
  }

  /** `POST /v1/schedules` (201). */
  async create(
    request: CreateScheduleRequest,
    opts: CreateScheduleOptions = {},
  ): Promise<CreatedSchedule> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.idempotencyKey !== undefined) headers['idempotency-key'] = opts.idempotencyKey;
    const res = await this.t.json('POST', '/v1/schedules', ScheduleDetailSchema, {
      body: request,
      headers,
      signal: opts.signal,
    });
    return { ...res.body, replayed: res.headers.get('idempotent-replayed') === 'true' };
  }

  /** `GET /v1/schedules/:id`: state, next firing time, latest firings. */
  async get(scheduleId: string, opts: RequestOptions = {}): Promise<ScheduleDetail> {
    return (
      await this.t.json('GET', `/v1/schedules/${enc(scheduleId)}`, ScheduleDetailSchema, opts)
    ).body;
  }

  /** `GET /v1/schedules`: one page of the tenant's schedules, newest first. */
  async list(query: PageQuery = {}, opts: RequestOptions = {}): Promise<SchedulePage> {
    return (
      await this.t.json('GET', '/v1/schedules', SchedulePageSchema, {
        ...opts,
        query: { ...query },
      })
    ).body;
  }

  /** `GET /v1/schedules/:id/runs`: the runs it created, newest first. */
  async runs(
    scheduleId: string,
    query: PageQuery = {},
    opts: RequestOptions = {},
  ): Promise<RunPage> {
    return (
      await this.t.json('GET', `/v1/schedules/${enc(scheduleId)}/runs`, RunPageSchema, {
        ...opts,
        query: { ...query },
      })
    ).body;
  }

  /** `POST /v1/schedules/:id/pause` (idempotent). */
  async pause(scheduleId: string, opts: RequestOptions = {}): Promise<ScheduleDetail> {
    return (
      await this.t.json(
        'POST',
        `/v1/schedules/${enc(scheduleId)}/pause`,
        ScheduleDetailSchema,
        opts,
      )
    ).body;
  }

  /** `POST /v1/schedules/:id/resume` (idempotent; `conflict` once completed). */
  async resume(scheduleId: string, opts: RequestOptions = {}): Promise<ScheduleDetail> {
    return (
      await this.t.json(
        'POST',
        `/v1/schedules/${enc(scheduleId)}/resume`,
        ScheduleDetailSchema,
        opts,
      )
    ).body;
  }

  /** `DELETE /v1/schedules/:id` (204); the runs it created stay. */
  async delete(scheduleId: string, opts: RequestOptions = {}): Promise<void> {
    await this.t.noContent('DELETE', `/v1/schedules/${enc(scheduleId)}`, opts);
  }
}
