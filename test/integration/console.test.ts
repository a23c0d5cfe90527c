import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Page } from 'playwright-core';
import { BatonClient } from '@baton/client';
import { createDemoAgents } from '@baton/core/testing';
import type { RunEvent } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { startApi } from '@baton/api';
import { KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { silentLogger } from '@baton/testing/worker-harness';
import { openConsole as openConsolePage, signIn as signInWith } from '@baton/testing/console-page';
import {
  SCREENSHOT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  skipWithoutChromium,
  type TestBrowser,
} from '@baton/testing/browser';

describe.skipIf(skipWithoutChromium())('run console in a real Chromium', () => {
  let c: ApiCluster;
  let b: TestBrowser;
  let url: string;
  let client: BatonClient;
  beforeAll(async () => {
    ensureConsoleBuilt();
    b = await launchChromium();
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock));
    url = c.apis[0]!.url;
    client = new BatonClient({ baseUrl: url, apiKey: KEYS.a });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await c?.stop();
  });

  /** A page whose console errors and CSP violations fail the test. */
  const openConsole = (width = 1100, height = 800) =>
    openConsolePage(b.browser, url, { width, height });
  const signIn = (page: Page) => signInWith(page, KEYS.a);

  async function startRun(page: Page, message: string): Promise<string> {
    await page.getByRole('link', { name: 'New run' }).click();
    await page.getByRole('heading', { name: 'Start a run' }).waitFor();
    await page.getByLabel('Agent').selectOption('assistant');
    await page.getByLabel('Message').fill(message);
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/#\/runs\//);
    return decodeURIComponent(new URL(page.url()).hash.replace('#/runs/', ''));
  }

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });

  it('serves static files with a strict CSP and no auth; the key is asked once per tab', async () => {
    const res = await fetch(`${url}/console/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await fetch(`${url}/console`, { redirect: 'manual' })).headers.get('location')).toBe(
      '/console/',
    );
    // the API behind it still wants a key
    expect((await fetch(`${url}/v1/runs`)).status).toBe(401);

    const { page, problems } = await openConsole();
    await page.getByRole('heading', { name: 'Sign in with an API key' }).waitFor();
    await shot(page, '1-sign-in');
    await page.getByLabel('API key').fill('not-a-valid-key');
    await page.getByRole('button', { name: 'Use this key' }).click();
    // a refused key is forgotten and asked for again
    await page.getByRole('heading', { name: 'Sign in with an API key' }).waitFor();
    await signIn(page);
    expect(await page.evaluate(() => sessionStorage.getItem('baton.apiKey'))).toBe(KEYS.a);
    await page.reload();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
    await page.context().close();
  });

  it('starts a run, sees it wait, approves with a payload, sees it finish', async () => {
    const { page, problems } = await openConsole();
    await signIn(page);
    await shot(page, '2-runs');
    await page.getByRole('link', { name: 'New run' }).click();
    await page.getByLabel('Agent').selectOption('assistant');
    await expect
      .poll(() => page.locator('#agent-help').textContent())
      .toContain('deploy_service (approval)');
    await page.getByLabel('Message').fill('deploy please');
    await shot(page, '3-new-run');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/#\/runs\//);
    const runId = decodeURIComponent(new URL(page.url()).hash.replace('#/runs/', ''));

    const waiting = page.getByRole('region', { name: 'Waiting for a decision' });
    await waiting.getByText('Deploy "checkout" to "production"?').waitFor();
    await expect.poll(() => page.getByTestId('run-status').textContent()).toContain('waiting');
    await expect
      .poll(() => page.getByTestId('tool-get_weather').textContent())
      .toMatch(/new.*running.*succeeded/);
    await expect
      .poll(() => page.getByTestId('tool-deploy_service').textContent())
      .toMatch(/new.*suspended/);
    await page.getByText('Checking the weather first, then deploying.').waitFor();
    await shot(page, '4-run-waiting');

    await waiting.getByLabel('comment (optional)').fill('ship it');
    await waiting.getByRole('button', { name: 'Approve' }).click();
    await expect
      .poll(() => page.getByTestId('run-status').textContent(), { timeout: 15_000 })
      .toContain('done');
    await expect
      .poll(() => page.getByTestId('tool-deploy_service').textContent())
      .toMatch(/suspended.*resuming.*running.*succeeded/);
    await page.getByText(/All done\./).waitFor();
    expect(await page.getByRole('region', { name: 'Waiting for a decision' }).count()).toBe(0);
    await page.getByText('finished: natural_end').waitFor();
    await shot(page, '5-run-done');

    const events: RunEvent[] = [];
    for await (const e of client.runs.stream(runId)) events.push(e);
    expect(events.find((e) => e.type === 'decision.applied')).toMatchObject({
      decision: { action: 'resume', payload: { comment: 'ship it' } },
    });
    // the list shows the run as done
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await expect
      .poll(() => page.getByRole('row', { name: new RegExp(runId) }).textContent())
      .toContain('done');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('denies a call and cancels a run, at phone width, keyboard only', async () => {
    const { page, problems } = await openConsole(390, 844);
    await signIn(page);
    const denied = await startRun(page, 'deploy now');
    const waiting = page.getByRole('region', { name: 'Waiting for a decision' });
    await waiting.getByRole('button', { name: 'Deny' }).waitFor();
    // keyboard: focus the Deny button and press Enter
    await waiting.getByRole('button', { name: 'Deny' }).focus();
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.getByTestId('run-status').textContent(), { timeout: 15_000 })
      .toContain('done');
    await expect
      .poll(() => page.getByTestId('tool-deploy_service').textContent())
      .toMatch(/suspended.*cancelled/);
    await shot(page, '6-run-denied-phone');
    expect((await client.runs.get(denied)).decisions).toMatchObject([{ action: 'cancel' }]);

    const cancelled = await startRun(page, 'report please');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await expect
      .poll(() => page.getByTestId('run-status').textContent(), { timeout: 15_000 })
      .toContain('cancelled');
    expect((await client.runs.get(cancelled)).termination).toEqual({ kind: 'cancelled' });
    // nothing is wider than the phone's screen
    const width = await page.evaluate<number>('document.documentElement.scrollWidth');
    expect(width).toBeLessThanOrEqual(390);
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await page.getByRole('row', { name: new RegExp(cancelled) }).waitFor();
    await shot(page, '7-runs-phone');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('follows a run across an API restart by itself, then approves through the new process', async () => {
    const { runId } = await client.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    const { page, problems } = await openConsole();
    await signIn(page);
    await page.goto(`${url}/console/#/runs/${encodeURIComponent(runId)}`);
    const waiting = page.getByRole('region', { name: 'Waiting for a decision' });
    await waiting.getByRole('button', { name: 'Approve' }).waitFor();

    const port = Number(new URL(url).port);
    await c.apis[0]!.close();
    await page.getByText(/reconnecting \(attempt \d+\)/).waitFor();
    await shot(page, '8-run-reconnecting');
    c.apis[0] = await startApi({ config: c.config, port, host: '127.0.0.1', logger: silentLogger });

    await waiting.getByLabel('comment (optional)').fill('after the restart');
    await waiting.getByRole('button', { name: 'Approve' }).click();
    await expect
      .poll(() => page.getByTestId('run-status').textContent(), { timeout: 20_000 })
      .toContain('done');
    await page.getByText('stream ended').waitFor();
    const events: RunEvent[] = [];
    for await (const e of client.runs.stream(runId)) events.push(e);
    expect(events.find((e) => e.type === 'decision.applied')).toMatchObject({
      decision: { payload: { comment: 'after the restart' } },
    });
    // the page saw every event exactly once: its counter is the log's length
    await expect
      .poll(() => page.locator('.facts div:nth-child(3) dd').textContent())
      .toBe(String(events.length));
    // the failed fetches while the API was down are the only console errors
    expect(problems.filter((p) => !/ERR_CONNECTION_REFUSED|Failed to fetch|net::/.test(p))).toEqual(
      [],
    );
    await page.context().close();
  }, 60_000);
});
