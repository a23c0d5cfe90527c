import { connect } from 'node:net';

/**
 * Records every command Redis executes while `during` runs, as the raw MONITOR lines
 * (`+<time> [0 <client>] "cmd" "arg" …`). Other clients' commands show too: filter by key
 * prefix. A plain socket, since MONITOR turns the connection into a one-way feed.
 */
export async function monitorCommands(
  redisUrl: string,
  during: () => Promise<void>,
): Promise<string[]> {
  const { hostname, port } = new URL(redisUrl);
  const socket = connect(Number(port || 6379), hostname);
  socket.setEncoding('utf8');
  let buffer = '';
  const seen: string[] = [];
  let onLine: (() => void) | undefined;
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    let nl = buffer.indexOf('\r\n');
    while (nl !== -1) {
      seen.push(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 2);
      nl = buffer.indexOf('\r\n');
    }
    onLine?.();
  });
  const waitFor = (pred: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      onLine = () => {
        if (pred()) resolve();
      };
      onLine();
    });
  socket.write('MONITOR\r\n');
  await waitFor(() => seen.includes('+OK'));
  try {
    await during();
    // The feed is asynchronous: a marker command sent afterwards shows everything before it arrived.
    const marker = `monitor-flush-${Date.now()}`;
    const probe = connect(Number(port || 6379), hostname);
    probe.write(`ECHO ${marker}\r\n`);
    await waitFor(() => seen.some((line) => line.includes(marker)));
    probe.destroy();
  } finally {
    socket.destroy();
  }
  return seen.map((line) => line.toLowerCase());
}
