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
  const server = createServer(api.app);
  // Idle keep-alive sockets must outlive typical proxy timeouts; SSE streams send heartbeats.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;
  const host = opts.host ?? opts.config.HOST;
  const port = opts.port ?? opts.config.PORT;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
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
