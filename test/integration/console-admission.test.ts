/**
 * The console shows admission and sets it (issue 37 items 3 and 7), in a real Chromium at
 * 1280 px and at phone width: the runs list marks a run queued behind its fairness window with a
 * badge and filters to such runs; the new-run form sets priority, fairness key and webhook; a
 * form creates a schedule; table words never break mid-word; the run tree and timeline name an
 * agent tool called after its agent once; the timeline shows a decision's comment.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Page } from 'playwright-core';
import { BatonClient } from '@baton/client';
import { ScriptedModel, agentTool, type AgentDefinition } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { holdingAgent } from '@baton/testing/holding-agent';
import { waitFor } from '@baton/testing/worker-harness';
import { openConsole as openConsolePage, signIn as signInWith } from '@baton/testing/console-page';
import {
  SCREENSHOT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  skipWithoutChromium,
  type TestBrowser,
} from '@baton/testing/browser';

// A run of `holder` keeps its fairness slot until the test lets go.
const { agent: holder, letGo } = holdingAgent();

// An agent tool named after its agent (agentTool's default): the tree names it once.
const researcher: AgentDefinition = {
  name: 'researcher',
  model: new ScriptedModel(() => ({ text: 'found it' })),
  tools: [],
};
const lead: AgentDefinition = {
  name: 'lead',
  model: new ScriptedModel((request) =>
    request.messages.some((m) => m.role === 'tool')
      ? { text: 'done' }
      : { toolCalls: [{ name: 'researcher', arguments: { message: 'look it up' } }] },
  ),
  tools: [agentTool('researcher', { description: 'researches' })],
};

/**
 * Words of the tables' cells that the browser broke over two lines ("waitin/g", "Pau/se"). Ids
 * (links, monospace) may break: they are one long word. Screen-reader-only text is 1 px wide.
 */
const BROKEN_WORDS = `(() => {
  const broken = [];
  for (const cell of document.querySelectorAll('table.runs th, table.runs td')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement && node.parentElement.closest('a, .mono, .sr-only')) continue;
      for (const m of (node.textContent || '').matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
})()`;
const brokenWords = (page: Page): Promise<string[]> => page.evaluate<string[]>(BROKEN_WORDS);

const scrollWidth = (page: Page): Promise<number> =>
  page.evaluate<number>('document.documentElement.scrollWidth');

describe.skipIf(skipWithoutChromium())('console: admission, forms, tables', () => {
  let c: ApiCluster;
  let b: TestBrowser;
  let url: string;
  let client: BatonClient;
  beforeAll(async () => {
    ensureConsoleBuilt();
    b = await launchChromium();
    c = await startApiCluster(
      inject('redisUrl'),
      [...createDemoAgents(systemClock), holder, researcher, lead],
      {
        shared: {
          BATON_FAIRNESS: JSON.stringify({ tenants: { 'tenant-a': { maxRunsPerKey: 1 } } }),
          BATON_WEBHOOK_ALLOW_PRIVATE: 'true',
        },
      },
    );
    url = c.apis[0]!.url;
    client = new BatonClient({ baseUrl: url, apiKey: KEYS.a });
  }, 60_000);
  afterAll(async () => {
    letGo();
    await b?.close();
    await c?.stop();
  });

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });

  async function newRun(
    page: Page,
    fields: { message: string; priority?: string; key?: string; webhook?: string },
  ): Promise<string> {
    await page.getByRole('link', { name: 'New run' }).click();
    await page.getByRole('heading', { name: 'Start a run' }).waitFor();
    await page.getByLabel('Agent').selectOption('holder');
    await page.getByLabel('Message').fill(fields.message);
    if (fields.priority) await page.getByLabel('Priority').selectOption(fields.priority);
    if (fields.key) await page.getByLabel('Fairness key (optional)').fill(fields.key);
    if (fields.webhook) await page.getByLabel('Webhook URL (optional)').fill(fields.webhook);
    await page.getByRole('button', { name: 'Start run' }).click();
    if (fields.webhook) {
      // The generated secret, shown once, then the run.
      await expect.poll(() => page.getByTestId('webhook-secret').textContent()).toMatch(/^whsec_/);
      await page.getByRole('link', { name: 'Open the run' }).click();
    }
    await page.waitForURL(/#\/runs\//);
    return decodeURIComponent(new URL(page.url()).hash.replace('#/runs/', ''));
  }

  it('the new-run form sets priority, fairness key and webhook; the list badges and filters the queued run (1280 px)', async () => {
    const { page, problems } = await openConsolePage(b.browser, url, { width: 1280, height: 900 });
    await signInWith(page, KEYS.a);
    const first = await newRun(page, { message: 'hold it', priority: '2', key: 'alice' });
    const second = await newRun(page, {
      message: 'me too',
      key: 'alice',
      webhook: 'http://127.0.0.1:9/hooks',
    });
    expect(await client.runs.get(first)).toMatchObject({ priority: 2, fairnessKey: 'alice' });
    const queued = await client.runs.get(second);
    expect(queued).toMatchObject({ priority: 3, fairnessKey: 'alice', queued: { position: 1 } });
    expect((await client.runs.webhooks(second)).endpoints).toMatchObject([
      { endpoint: 'run', url: 'http://127.0.0.1:9/hooks' },
    ]);
    await page.getByTestId('run-queued').waitFor();

    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    const row = (runId: string) => page.getByRole('row', { name: new RegExp(runId) });
    await expect.poll(() => row(second).textContent()).toContain('queued 1 of 1');
    expect(await row(second).textContent()).toContain('P3 · alice');
    expect(await row(first).textContent()).toContain('P2 · alice');
    expect(await row(first).textContent()).not.toContain('queued');
    await shot(page, 'admission-1-runs-1280');
    expect(await brokenWords(page)).toEqual([]);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(1280);

    await page.getByLabel('Admission').selectOption('queued');
    await page.waitForURL(/admission=queued/);
    await expect.poll(() => page.locator('table.runs tbody tr').count()).toBe(1);
    expect(await row(second).count()).toBe(1);
    // The filter is in the URL: a reload keeps it.
    await page.reload();
    await expect.poll(() => page.locator('table.runs tbody tr').count()).toBe(1);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('at phone width the queued badge and filter fit the screen', async () => {
    const { page, problems } = await openConsolePage(b.browser, url, { width: 390, height: 844 });
    await signInWith(page, KEYS.a);
    await page.getByLabel('Admission').selectOption('queued');
    await expect.poll(() => page.locator('table.runs tbody tr').count()).toBe(1);
    await expect.poll(() => page.locator('.badge.queued').textContent()).toBe('queued 1 of 1');
    await shot(page, 'admission-2-runs-phone');
    expect(await brokenWords(page)).toEqual([]);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(390);
    await page.getByRole('link', { name: 'New run' }).click();
    await page.getByLabel('Fairness key (optional)').waitFor();
    expect(await scrollWidth(page)).toBeLessThanOrEqual(390);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('a form creates a schedule; the schedules table does not break words (1280 px and phone)', async () => {
    const { page, problems } = await openConsolePage(b.browser, url, { width: 1280, height: 900 });
    await signInWith(page, KEYS.a);
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.getByText('Create a schedule').click();
    const form = page.getByRole('form', { name: 'Create a schedule' });
    await form.getByLabel('Name (optional)').fill('nightly report');
    await form.getByLabel('Agent').selectOption('assistant');
    await form.getByLabel('Message').fill('report on uptime');
    await form.getByLabel('Fires').selectOption('cron');
    await form.getByLabel('Cron expression').fill('0 3 * * *');
    await form.getByLabel('Time zone').fill('Europe/Oslo');
    await form.getByLabel('Priority of its runs').selectOption('4');
    await form.getByLabel('Fairness key of its runs (optional)').fill('reports');
    await form.getByRole('button', { name: 'Create schedule' }).click();
    await page.waitForURL(/#\/schedules\/.+/);
    const scheduleId = decodeURIComponent(new URL(page.url()).hash.replace('#/schedules/', ''));
    const made = await client.schedules.get(scheduleId);
    expect(made).toMatchObject({
      name: 'nightly report',
      agent: 'assistant',
      cron: '0 3 * * *',
      timezone: 'Europe/Oslo',
      options: { priority: 4, fairnessKey: 'reports' },
    });
    // A bad cron is the API's message, shown in the form.
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.getByText('Create a schedule').click();
    await form.getByLabel('Message').fill('again');
    await form.getByLabel('Fires').selectOption('cron');
    await form.getByLabel('Cron expression').fill('not a cron');
    await form.getByRole('button', { name: 'Create schedule' }).click();
    await form.getByRole('alert').waitFor();
    await page.getByRole('button', { name: 'Pause nightly report' }).waitFor();
    await shot(page, 'admission-3-schedules-1280');
    expect(await brokenWords(page)).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await brokenWords(page)).toEqual([]);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(390);
    // The refused cron's 400, and nothing else.
    expect(problems.filter((p) => !p.includes('400 (Bad Request)'))).toEqual([]);
    await page.context().close();
  });

  it('the run tree and timeline name a child run of an agent tool named after its agent once (1280 px and phone)', async () => {
    const { runId } = await client.runs.create({
      agent: 'lead',
      input: { messages: [{ role: 'user', content: 'research' }] },
    });
    await waitFor(
      async () => ((await client.runs.get(runId)).status === 'done' ? true : null),
      30_000,
      'the lead run to finish',
    );
    const childId = `${runId}.s1c0`;
    for (const viewport of [
      { width: 1280, height: 900 },
      { width: 390, height: 844 },
    ]) {
      const { page, problems } = await openConsolePage(b.browser, url, viewport);
      await signInWith(page, KEYS.a);
      await page.goto(`${url}/console/#/runs/${encodeURIComponent(runId)}`);
      const item = page.getByTestId(`child-${childId}`);
      await expect.poll(() => item.textContent(), { timeout: 15_000 }).toContain('done');
      expect(await item.textContent()).toContain('researcher');
      expect(await item.textContent()).not.toContain('for researcher');
      await expect
        .poll(() => page.locator('ol.timeline').textContent())
        .toContain(`researcher runs as child run ${childId}`);
      expect(await page.locator('ol.timeline').textContent()).not.toContain('(researcher)');
      expect(await scrollWidth(page)).toBeLessThanOrEqual(viewport.width);
      expect(problems).toEqual([]);
      await page.context().close();
    }
  });

  it("the timeline shows the approver's comment", async () => {
    const { runId } = await client.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    const call = await waitFor(
      async () => (await client.runs.get(runId)).await?.calls[0]?.toolCallId ?? null,
      30_000,
      'the run to wait',
    );
    await client.runs.decide(runId, {
      toolCallId: call,
      action: 'resume',
      payload: { comment: 'ship it' },
    });
    const { page, problems } = await openConsolePage(b.browser, url, { width: 1280, height: 900 });
    await signInWith(page, KEYS.a);
    await page.goto(`${url}/console/#/runs/${encodeURIComponent(runId)}`);
    await expect
      .poll(() => page.locator('ol.timeline').textContent(), { timeout: 15_000 })
      .toContain(`decision approve (${call}): “ship it”`);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
