/**
 * A child process of the sse-fanout scenario: holds many SSE subscribers (one socket each) and
 * measures each frame's delivery lag (`at` of the JSON in its data → parsed here, same machine
 * clock). Protocol on stdin/stdout, one line each:
 *   in:  {"base": url, "headers": {...}, "streams": [{"path": "/v1/...", "count": n}, ...], "parallelism": p}
 *   out: READY <connected>           every subscriber has its response headers (200)
 *   out: DONE <ended>                every stream was ended by the server
 *   in:  REPORT                      out: RESULT <json>  then exit
 * Lags are kept as 0.01 ms integers in a growing typed array (hundreds of thousands of frames).
 */
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

interface Config {
  readonly base: string;
  readonly headers: Record<string, string>;
  readonly streams: readonly { path: string; count: number }[];
  readonly parallelism: number;
}

let lags = new Int32Array(1 << 16);
let nLags = 0;
let frames = 0;
let bytes = 0;
let errors = 0;
let firstError: string | undefined;
let connected = 0;
let ended = 0;
let total = 0;

function record(lagMs: number): void {
  if (nLags === lags.length) {
    const bigger = new Int32Array(lags.length * 2);
    bigger.set(lags);
    lags = bigger;
  }
  lags[nLags++] = Math.round(lagMs * 100);
}

function fail(message: string): void {
  errors += 1;
  firstError ??= message;
}

/** Parses `data:` lines of complete frames; only `at` is needed, so no full SSE parser. */
function onText(state: { buffer: string }, text: string): void {
  const now = performance.timeOrigin + performance.now();
  state.buffer += text;
  let end: number;
  while ((end = state.buffer.indexOf('\n\n')) >= 0) {
    const frame = state.buffer.slice(0, end);
    state.buffer = state.buffer.slice(end + 2);
    const data = frame
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
      .join('\n');
    if (data === '') continue; // a comment (`: ping`)
    frames += 1;
    try {
      const at = (JSON.parse(data) as { at?: number }).at;
      if (typeof at === 'number') record(now - at);
    } catch {
      fail(`unparsable frame: ${data.slice(0, 80)}`);
    }
  }
}

function open(config: Config, path: string): Promise<void> {
  const base = new URL(config.base);
  return new Promise((resolve) => {
    const state = { buffer: '' };
    let settled = false;
    const settle = (): void => {
      if (!settled) {
        settled = true;
        resolve();
      }
    };
    const req = request({
      host: base.hostname,
      port: base.port,
      path,
      method: 'GET',
      agent: false,
      headers: { ...config.headers, accept: 'text/event-stream' },
    });
    req.on('error', (err) => {
      fail(`${path}: ${err.message}`);
      settle();
    });
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        fail(`${path}: HTTP ${res.statusCode}`);
        res.resume();
        settle();
        return;
      }
      connected += 1;
      settle();
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        bytes += Buffer.byteLength(text);
        onText(state, text);
      });
      res.on('end', () => {
        ended += 1;
        if (ended === total) process.stdout.write(`DONE ${ended}\n`);
      });
      res.on('error', (err) => fail(`${path}: ${err.message}`));
    });
    req.end();
  });
}

async function start(config: Config): Promise<void> {
  const paths: string[] = [];
  for (const s of config.streams) for (let i = 0; i < s.count; i += 1) paths.push(s.path);
  total = paths.length;
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < paths.length) await open(config, paths[next++] as string);
  };
  await Promise.all(Array.from({ length: Math.max(1, config.parallelism) }, lane));
  process.stdout.write(`READY ${connected}\n`);
  if (total === 0) process.stdout.write('DONE 0\n');
}

const lines = createInterface({ input: process.stdin });
let configured = false;
lines.on('line', (line) => {
  if (!configured) {
    configured = true;
    void start(JSON.parse(line) as Config);
    return;
  }
  if (line.trim() === 'REPORT') {
    const result = {
      subscribers: total,
      connected,
      ended,
      frames,
      bytes,
      errors,
      firstError,
      cpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
      lagsCentiMs: Array.from(lags.subarray(0, nLags)),
    };
    process.stdout.write(`RESULT ${JSON.stringify(result)}\n`, () => process.exit(0));
  }
});
