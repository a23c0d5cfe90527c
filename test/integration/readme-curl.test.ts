/**
 * The README's curl session is a promise to a newcomer: run as written against a started stack
 * (the demo agents, as `npm start` runs them), it creates a run, streams it until it waits for the
 * deploy approval, approves, and streams the rest from the last event seen. The block is read out
 * of README.md, so an edit there that breaks it fails here. Only the two values the README asks
 * the reader to fill in (the URL, if not localhost:3000, and the key) are replaced.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';

const README = new URL('../../README.md', import.meta.url);
const TOOLS = ['bash', 'curl', 'jq'];

/** The ```bash block under "## Try it with curl". */
function curlBlock(): string {
  const readme = readFileSync(README, 'utf8');
  const section = /^## Try it with curl\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1];
  const block = /```bash\n([\s\S]*?)```/.exec(section ?? '')?.[1];
  if (!block) throw new Error('README.md has no ```bash block under "## Try it with curl"');
  return block;
}

function runBash(script: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

function hasTool(tool: string): boolean {
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => existsSync(join(dir, tool)));
}

/** CI as CI systems set it: any value but empty, 0 or false. */
const inCi = !['', '0', 'false'].includes((process.env['CI'] ?? '').trim().toLowerCase());
const missing = TOOLS.filter((t) => !hasTool(t));
// Like the console tests without Chromium: a machine without jq skips, saying so; CI fails.
const skip = missing.length > 0 && !inCi;
if (skip)
  console.warn(
    `[baton tests] README curl session skipped: ${missing.join(', ')} not found (apt-get install ${missing.join(' ')}); under CI=true it fails instead.`,
  );

describe.skipIf(skip)("the README's curl session", () => {
  let c: ApiCluster;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock));
  });
  afterAll(async () => {
    await c.stop();
  });

  it('runs as written: create, stream to the approval, approve, stream the rest', async () => {
    expect(missing, `the README's curl session needs ${missing.join(', ')}`).toEqual([]);
    const block = curlBlock();
    expect(block).toContain('http://localhost:3000');
    expect(block).toContain('<the key npm start printed>');
    const script = block
      .replace('http://localhost:3000', c.apis[0]!.url)
      .replace('<the key npm start printed>', KEYS.a);

    const { code, out, err } = await runBash(script);
    expect(code, `${out}\n${err}`).toBe(0);

    // Both streams together: every seq once, in order, from 1 to the end, the approval between.
    const ids = [...out.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids.length).toBeGreaterThan(0);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    const events = [...out.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    const suspended = events.indexOf('tool_call.suspended');
    expect(suspended).toBeGreaterThanOrEqual(0);
    expect(events.at(-1)).toBe('run.finished');
    expect(out).toMatch(/"type":"run\.finished"[^\n]*"status":"done"/);
    // The decisions reply on a line of its own (JSON replies end without a newline: jq adds it),
    // not glued to the next stream's first frame.
    expect(out).toMatch(/^\{"runId":[^\n]*"accepted"[^\n]*\}$/m);
    expect(out).not.toContain('event_log_rewound');
    // The snapshot line the README prints: waiting, with the call it approves.
    expect(out).toMatch(/"status": "waiting"/);
  });
});
