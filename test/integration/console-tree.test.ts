/**
 * The console shows the whole run, in a real Chromium against a real API, worker and Redis: a
 * run's tree (parent and children, each linked, with status) and every call the tree waits on,
 * decided from the parent's page; the schedules view (pause, resume, a schedule's runs); a run's
 * webhook delivery log; the runs list's filters.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Page } from 'playwright-core';
import { BatonClient } from '@baton/client';
import type { RunEvent } from '@baton/protocol';
import {
  SCREENSHOT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  skipWithoutChromium,
  type TestBrowser,
} from '@baton/testing/browser';
import { openConsole, signIn } from '@baton/testing/console-page';
import type { WebhookReceiver } from '@baton/testing/webhook-receiver';
import { startWebhookStack, type WebhookStack } from '@baton/testing/webhook-stack';

const KEY = 'console-tree-key-123';
/** expect.poll gives up after 1 s by default; a loaded machine may take longer to refresh a list. */
const WAIT = { timeout: 15_000 };

describe.skipIf(skipWithoutChromium())('the console shows the whole run (Chromium)', () => {
  let s: WebhookStack;
  let b: TestBrowser;
  let url: string;
  let client: BatonClient;
  let rx: WebhookReceiver;
  beforeAll(async () => {
    ensureConsoleBuilt();
    b = await launchChromium();
    s = await startWebhookStack(inject('redisUrl'), KEY);
    ({ url, rx } = s);
    client = new BatonClient({ baseUrl: url, apiKey: KEY });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await s?.stop();
  });

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });

  async function signedIn(path = ''): Promise<{ page: Page; problems: string[] }> {
    const opened = await openConsole(b.browser, url);
    await signIn(opened.page, KEY);
    if (path) await opened.page.goto(`${url}/console/${path}`);
    return opened;
  }

  /** Nothing on the page is wider than a phone's screen. */
  async function fitsAPhone(page: Page): Promise<void> {
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
      390,
    );
  }

  async function runToEnd(runId: string): Promise<RunEvent[]> {
    const events: RunEvent[] = [];
    for await (const e of client.runs.stream(runId)) events.push(e);
    return events;
  }

  it("a child waits for approval: the parent's page shows the tree and the card; approving there finishes both", async () => {
    const { runId } = await client.runs.create({
      agent: 'tree-sequential',
      input: { messages: [{ role: 'user', content: 'call approval' }] },
    });
    const childId = `${runId}.s1c0`;
    const { page, problems } = await signedIn(`#/runs/${encodeURIComponent(runId)}`);

    const tree = page.getByRole('region', { name: 'Run tree' });
    const child = tree.getByTestId(`child-${childId}`);
    await child.getByRole('link', { name: childId }).waitFor();
    await expect.poll(() => child.textContent(), { timeout: 15_000 }).toContain('waiting');
    expect(await child.textContent()).toContain('child-approval · for approval');

    // The parent itself runs (its call waits for the child); the child's call is on its page.
    const waiting = page.getByRole('region', { name: 'Waiting for a decision' });
    await waiting.getByText('Let the child go on?').waitFor();
    await waiting.getByText('Asked by child run').waitFor();
    expect(await waiting.getByRole('link', { name: childId }).count()).toBe(1);
    expect(await page.getByTestId('run-status').textContent()).not.toContain('done');
    // the parent's tool call names the child run it started
    await page.getByTestId('tool-approval').getByRole('link', { name: childId }).waitFor();
    await shot(page, 'tree-1-parent-waits-for-child');

    await waiting.getByRole('button', { name: 'Approve' }).click();
    await expect
      .poll(() => page.getByTestId('run-status').textContent(), { timeout: 20_000 })
      .toContain('done');
    await expect.poll(() => child.textContent(), WAIT).toContain('done');
    expect(await page.getByRole('region', { name: 'Waiting for a decision' }).count()).toBe(0);
    const [parentView, childView] = await Promise.all([
      client.runs.get(runId),
      client.runs.get(childId),
    ]);
    expect(parentView.termination).toEqual({ kind: 'natural_end' });
    expect(parentView.lastAssistantMessage).toContain('child approved and done');
    expect(childView.termination).toEqual({ kind: 'natural_end' });
    expect(childView.decisions).toMatchObject([{ action: 'resume' }]);
    await shot(page, 'tree-2-both-done');
    await fitsAPhone(page);

    // The child's page names its parent; the link leads back.
    await child.getByRole('link', { name: childId }).click();
    await page.getByRole('heading', { name: `Run ${childId}` }).waitFor();
    const parent = page.getByTestId('run-parent');
    await parent.getByRole('link', { name: runId }).click();
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    expect(problems).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('shows a tree two levels deep, each run linked with its status', async () => {
    const { runId } = await client.runs.create({
      agent: 'tree-batch',
      input: { messages: [{ role: 'user', content: 'call middle' }] },
    });
    await runToEnd(runId);
    const middle = `${runId}.s1c0`;
    const leaf = `${middle}.s1c0`;
    const { page, problems } = await signedIn(`#/runs/${encodeURIComponent(runId)}`);
    const tree = page.getByRole('region', { name: 'Run tree' });
    const leafItem = tree.getByTestId(`child-${middle}`).getByTestId(`child-${leaf}`);
    await leafItem.getByRole('link', { name: leaf }).waitFor();
    expect(await leafItem.textContent()).toContain('done');
    expect(await leafItem.textContent()).toContain('child-answer');
    await leafItem.getByRole('link', { name: leaf }).click();
    const parent = page.getByTestId('run-parent');
    await parent.getByRole('link', { name: middle }).waitFor();
    // the root is named too when it is not the parent
    await parent.getByRole('link', { name: runId, exact: true }).waitFor();
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('lists schedules, pauses and resumes one, and links a schedule to its runs', async () => {
    const hourly = await client.schedules.create({
      name: 'console-weekday-mornings',
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Paris?' }] },
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
    });
    const once = await client.schedules.create({
      name: 'console-once',
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Oslo?' }] },
      everyMs: 1_000,
      limit: 1,
    });
    const { page, problems } = await signedIn();
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.getByRole('heading', { name: 'Schedules' }).waitFor();
    const row = page.getByRole('row', { name: /console-weekday-mornings/ });
    await expect.poll(() => row.textContent(), WAIT).toContain('cron 0 9 * * 1-5 (Europe/Paris)');
    expect(await row.textContent()).toContain('active');

    await row.getByRole('button', { name: 'Pause console-weekday-mornings' }).click();
    await expect.poll(() => row.textContent(), WAIT).toContain('paused');
    expect((await client.schedules.get(hourly.scheduleId)).state).toBe('paused');
    await shot(page, 'schedules-1-paused');
    await row.getByRole('button', { name: 'Resume console-weekday-mornings' }).click();
    await expect.poll(() => row.textContent(), WAIT).toContain('active');
    expect((await client.schedules.get(hourly.scheduleId)).state).toBe('active');

    // The one-shot schedule fires once; its page lists the run it created, linked.
    await page.getByRole('link', { name: 'console-once' }).click();
    await page.getByRole('heading', { name: 'Schedule console-once' }).waitFor();
    const runs = page.getByRole('region', { name: 'Runs' });
    await expect.poll(() => runs.getByRole('link').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    await expect
      .poll(() => page.getByTestId('schedule-state').textContent(), { timeout: 20_000 })
      .toContain('completed');
    await shot(page, 'schedules-2-schedule-runs');
    await fitsAPhone(page);
    const [scheduled] = (await client.schedules.runs(once.scheduleId)).runs;
    expect(scheduled).toBeDefined();
    await runs.getByRole('link', { name: scheduled!.runId }).click();
    await page.getByRole('heading', { name: `Run ${scheduled!.runId}` }).waitFor();
    // the run's page leads back to its schedule
    await page.getByRole('link', { name: once.scheduleId, exact: true }).click();
    await page.getByRole('heading', { name: 'Schedule console-once' }).waitFor();
    expect(problems).toEqual([]);
    await page.context().close();
  }, 60_000);

  it("shows a run's webhook delivery log", async () => {
    const { runId } = await client.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Rome?' }] },
      webhook: { url: rx.url('/console'), events: ['run.finished'] },
    });
    await runToEnd(runId);
    const { page, problems } = await signedIn(`#/runs/${encodeURIComponent(runId)}`);
    const log = page.getByRole('region', { name: 'Webhooks' });
    await log.getByText(rx.url('/console')).waitFor();
    const deliveries = log.getByTestId('webhook-deliveries');
    await expect
      .poll(() => deliveries.textContent(), { timeout: 20_000 })
      .toMatch(/run\.finished.*delivered.*HTTP 204/);
    expect(rx.on('/console')).toHaveLength(1);
    await shot(page, 'webhooks-1-delivered');
    await fitsAPhone(page);
    await shot(page, 'webhooks-2-phone');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('filters the runs list by status, agent and thread, and keeps the filters in the URL', async () => {
    const thread = `console-filter-${Date.now()}`;
    const onThread = await client.runs.create({
      agent: 'assistant',
      threadId: thread,
      input: { messages: [{ role: 'user', content: 'weather in Lima?' }] },
    });
    const waits = await client.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    const other = await client.runs.create({
      agent: 'child-answer',
      input: { messages: [{ role: 'user', content: 'hello' }] },
    });
    await runToEnd(onThread.runId);
    await runToEnd(other.runId);
    for await (const e of client.runs.stream(waits.runId, { until: 'suspended' })) void e;

    const { page, problems } = await signedIn();
    const row = (runId: string) => page.getByRole('row', { name: new RegExp(runId) });
    for (const r of [onThread, waits, other]) await row(r.runId).waitFor();

    await page.getByLabel('Status').selectOption('waiting');
    await expect.poll(() => row(onThread.runId).count(), WAIT).toBe(0);
    await row(waits.runId).waitFor();
    expect(await row(other.runId).count()).toBe(0);
    expect(page.url()).toContain('status=waiting');

    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Agent').selectOption('child-answer');
    await row(other.runId).waitFor();
    await expect.poll(() => row(waits.runId).count(), WAIT).toBe(0);
    expect(await row(onThread.runId).count()).toBe(0);

    await page.getByLabel('Agent').selectOption('');
    await page.getByLabel('Thread').fill(thread);
    await page.getByLabel('Thread').press('Enter');
    await row(onThread.runId).waitFor();
    await expect.poll(() => row(other.runId).count(), WAIT).toBe(0);
    expect(await row(waits.runId).count()).toBe(0);
    await shot(page, 'filters-1-thread');

    // A reload keeps the filter; a run's thread links to the same filtered list.
    await page.reload();
    await row(onThread.runId).waitFor();
    expect(await page.getByLabel('Thread').inputValue()).toBe(thread);
    expect(await row(waits.runId).count()).toBe(0);
    await page.goto(`${url}/console/#/runs/${encodeURIComponent(waits.runId)}`);
    await page.getByRole('heading', { name: `Run ${waits.runId}` }).waitFor();
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await row(waits.runId).waitFor();
    await client.runs.cancel(waits.runId);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
