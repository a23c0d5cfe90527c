/**
 * Test fixture: Debian's Chromium driven by playwright-core (no browser download). CI installs
 * the package (.ci/run); without it the console tests fail with this message instead of
 * skipping, so a missing browser can never pass for a green console.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SCREENSHOT_DIR = join(REPO_ROOT, '.cache', 'console-screenshots');
const CONSOLE_DIST = join(REPO_ROOT, 'apps', 'console', 'dist', 'index.html');

export function chromiumPath(): string {
  const candidates = [
    process.env['CHROMIUM_PATH'],
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
  ];
  const found = candidates.find((p): p is string => p !== undefined && p !== '' && existsSync(p));
  if (!found)
    throw new Error(
      'Chromium not found (looked at CHROMIUM_PATH, /usr/bin/chromium, /usr/bin/chromium-browser). ' +
        'Install it: apt-get install -y chromium (bash .ci/run does this when run as root).',
    );
  return found;
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
