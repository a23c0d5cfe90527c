/**
 * Test fixture: Debian's Chromium driven by playwright-core (no browser download). CI installs
 * the package (.ci/run), and under CI the console tests fail without it, so a missing browser
 * can never pass for a green console there. Elsewhere (CI unset) they skip with one line saying
 * how to get it: `npm test` passes on a machine that has only Node and Redis.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const SCREENSHOT_DIR = join(REPO_ROOT, '.cache', 'console-screenshots');
const CONSOLE_DIST = join(REPO_ROOT, 'apps', 'console', 'dist', 'index.html');

const NOT_FOUND =
  'Chromium not found (looked at CHROMIUM_PATH, /usr/bin/chromium, /usr/bin/chromium-browser). ' +
  'Install it: apt-get install -y chromium (bash .ci/run does this when run as root), or set CHROMIUM_PATH';

/** The Chromium to drive, or undefined when the machine has none. */
function findChromium(): string | undefined {
  const candidates = [
    process.env['CHROMIUM_PATH'],
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
  ];
  return candidates.find((p): p is string => p !== undefined && p !== '' && existsSync(p));
}

function chromiumPath(): string {
  const found = findChromium();
  if (!found) throw new Error(`${NOT_FOUND}.`);
  return found;
}

/** CI as CI systems (and .ci/run) set it: any value but empty, 0 or false. */
function inCi(): boolean {
  const ci = (process.env['CI'] ?? '').trim().toLowerCase();
  return ci !== '' && ci !== '0' && ci !== 'false';
}

/** Whether the browser tests skip: only without Chromium and outside CI. */
export function skipWithoutChromium(): boolean {
  return findChromium() === undefined && !inCi();
}

/**
 * The one line that says the browser tests skip and how to get Chromium, or undefined when they
 * run. The integration project's global set-up prints it once per run (each test file runs in a
 * process of its own, so the files themselves would print it once each).
 */
export function chromiumSkipNotice(): string | undefined {
  if (!skipWithoutChromium()) return undefined;
  return `[baton tests] console tests skipped: ${NOT_FOUND} (under CI=true they fail instead).`;
}

/** Builds the console when no build exists (npm test builds it first; a direct vitest run may not). */
export function ensureConsoleBuilt(): void {
  if (existsSync(CONSOLE_DIST)) return;
  execFileSync(
    process.execPath,
    [join(REPO_ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build'],
    {
      cwd: join(REPO_ROOT, 'apps', 'console'),
      stdio: 'pipe',
    },
  );
}

export interface TestBrowser {
  readonly browser: Browser;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<TestBrowser> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // playwright gives every launch a fresh temporary profile (--user-data-dir) and removes it.
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    close: () => browser.close(),
  };
}
