/**
 * Test fixture: a console page in the test Chromium (see browser.ts) that records what a person
 * would not see but a test must fail on: page errors, console errors (CSP violations are
 * reported there) and 5xx answers with what the API said.
 */
import type { Browser, Page } from 'playwright-core';

export interface ConsolePage {
  readonly page: Page;
  /** Page errors, console errors and 5xx answers, in order. */
  readonly problems: string[];
}

export async function openConsole(
  browser: Browser,
  apiUrl: string,
  viewport: { width: number; height: number } = { width: 1100, height: 800 },
  path = '',
): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  // Which request failed, and what the API said: a console line names neither.
  page.on('response', (r) => {
    if (r.status() < 500) return;
    void r.text().then(
      (body) =>
        problems.push(
          `response ${r.status()} ${r.request().method()} ${r.url()}: ${body.slice(0, 300)}`,
        ),
      () => problems.push(`response ${r.status()} ${r.request().method()} ${r.url()}`),
    );
  });
  await page.goto(`${apiUrl}/console/${path}`);
  return { page, problems };
}

/** Types the key into the sign-in form and waits for the runs list. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Use this key' }).click();
  await page.getByRole('heading', { name: 'Runs' }).waitFor();
}
