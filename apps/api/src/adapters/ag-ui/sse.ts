import type { AgUiEvent } from './types.ts';

/** Response headers of an AG-UI SSE stream (no [DONE] sentinel; RUN_FINISHED/RUN_ERROR end it). */
export const AG_UI_SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** One SSE frame: `data: <json>` + blank line, LF only (JSON.stringify escapes CR/LF in strings). */
export function agUiFrame(event: AgUiEvent): string {
  return `data: ${JSON.stringify(event)}\n\n`;
}
