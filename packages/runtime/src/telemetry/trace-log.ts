import { trace } from '@opentelemetry/api';
import type { LoggerOptions } from 'pino';
import { tracingActive } from './tracing-state.ts';

/**
 * pino mixin: the active span's ids on every line logged inside it (OTel's log field names). A
 * fresh object each time: pino merges the line's own fields into it.
 */
function traceLogFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** `{ mixin }` for pino's options while tracing, else `{}`: an untraced logger does no work. */
export function traceLogOptions(): Pick<LoggerOptions, 'mixin'> {
  return tracingActive() ? { mixin: traceLogFields } : {};
}
