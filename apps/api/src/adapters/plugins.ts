import type { ApiPlugin } from '../plugin.ts';
import { agUiRouter, type AgUiRouteOptions } from './ag-ui/route.ts';
import { aiSdkRouter, type AiSdkRouteOptions } from './ai-sdk/route.ts';

/** Where the front-end protocols are mounted (behind API-key auth like /v1). */
export const AI_SDK_PATH = '/v1/ai-sdk';
export const AG_UI_PATH = '/v1/ag-ui';

export interface ProtocolPluginOptions {
  readonly aiSdk?: AiSdkRouteOptions;
  readonly agUi?: AgUiRouteOptions;
}

/**
 * The front-end protocol adapters as API plugins: POST /v1/ai-sdk/chat,
 * GET /v1/ai-sdk/chat/:id/stream and POST /v1/ag-ui. createApp mounts these when it is given no
 * `plugins`, so `npm start`, main.ts and the tests serve the same set.
 */
export function protocolPlugins(opts: ProtocolPluginOptions = {}): ApiPlugin[] {
  return [
    { path: AI_SDK_PATH, router: (ctx) => aiSdkRouter(ctx, opts.aiSdk) },
    { path: AG_UI_PATH, router: (ctx) => agUiRouter(ctx, opts.agUi) },
  ];
}
