import type { UiChunk } from './chunks.ts';

/** Response headers of the UI message stream (same as ai's UI_MESSAGE_STREAM_HEADERS). */
export const AI_SDK_UI_STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
} as const;

/** One SSE frame for one chunk. */
export function uiChunkFrame(chunk: UiChunk): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** The frame that ends every UI message stream. */
export const UI_STREAM_DONE_FRAME = 'data: [DONE]\n\n';
