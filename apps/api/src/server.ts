import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, type ApiApp, type CreateAppOptions } from './app.ts';

export interface StartApiOptions extends CreateAppOptions {
  /** Overrides config.PORT (0 = any free port). */
  readonly port?: number;
  readonly host?: string;
}

export interface RunningApi {
  readonly server: Server;
  /** Base URL, e.g. http://127.0.0.1:3000 */
  readonly url: string;
  readonly api: ApiApp;
  close(): Promise<void>;
}

/** Builds the app and listens; close() ends streams, stops the server and releases Redis. */
export async function startApi(opts: StartApiOptions): Promise<RunningApi> {
  const api = await createApp(opts);
  const { REQUEST_TIMEOUT_MS, HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS } = opts.config;
  // requestTimeout bounds receiving the request only: SSE responses may last as long as they
  // like (heartbeats keep them alive), a client trickling its body may not.
  const server = createServer(
    {
      requestTimeout: REQUEST_TIMEOUT_MS,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS),
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // Node checks the two timeouts above on this period (30 s by default).
      connectionsCheckingInterval: Math.max(
        50,
        Math.min(HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS) / 4,
      ),
    },
    api.app,
  );
  const host = opts.host ?? opts.config.HOST;
  const port = opts.port ?? opts.config.PORT;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    // e.g. EADDRINUSE: release Redis so the caller can report and exit (or retry) cleanly.
    await api.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const shownHost =
    host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    server,
    url,
    api,
    close: () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await api.close();
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
        await stopped;
      })()),
  };
}
