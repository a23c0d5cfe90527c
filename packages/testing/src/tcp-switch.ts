/**
 * Test fixture: a TCP front door (what a load balancer is in production) that sends each new
 * connection to the current backend port. When a backend's socket closes — its process was
 * killed — the client's socket is destroyed too, exactly as a client talking to that process
 * directly would see it; the client's reconnect then lands on whatever backend is current.
 */
import { startTcpProxy } from './tcp-proxy.ts';

export interface TcpSwitch {
  readonly url: string;
  /** Where new connections go. */
  target: number;
  /** Connections accepted so far. */
  readonly accepted: () => number;
  close(): Promise<void>;
}

export async function startTcpSwitch(target: number): Promise<TcpSwitch> {
  const sw: { target: number } = { target };
  const proxy = await startTcpProxy({ backendPort: () => sw.target });
  return {
    url: `http://127.0.0.1:${String(proxy.port)}`,
    get target() {
      return sw.target;
    },
    set target(value: number) {
      sw.target = value;
    },
    accepted: proxy.accepted,
    close: () => proxy.close(),
  };
}
