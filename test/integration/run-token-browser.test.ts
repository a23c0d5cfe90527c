/**
 * Issue 35: examples/run-token-page in a real Chromium, served from another origin than the API
 * (CORS). The page starts a chat turn through the AI SDK route with a token its server minted
 * (thread:run), keeps the run token the API answers with, and approves the run's call with it;
 * a second run followed with EventSource (?access_token=) stops when its token is revoked.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonClient } from '@baton/client';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import {
  ensureConsoleBuilt,
  launchChromium,
  skipWithoutChromium,
  type TestBrowser,
} from '@baton/testing/browser';
import { decodeJwt } from 'jose';

const PAGE = readFileSync(new URL('../../examples/run-token-page/index.html', import.meta.url));

describe.skipIf(skipWithoutChromium())('a run token in a page on another origin', () => {
  let c: ApiCluster;
  let b: TestBrowser;
  let site: Server;
  let siteUrl: string;
  let api: string;
  let server: BatonClient;
  beforeAll(async () => {
    site = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    // localhost vs 127.0.0.1: another origin than the API's
    siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: { CORS_ORIGINS: siteUrl },
    });
    api = c.apis[0]!.url;
    server = new BatonClient({ baseUrl: api, apiKey: KEYS.a });
    ensureConsoleBuilt();
    b = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await c?.stop();
    site?.close();
  });

  it('streams the turn, approves its call with the run token; revoked, the stream stops', async () => {
    const chat = `chat-${Date.now()}`;
    const start = await server.tokens.mint({ scopes: [`thread:run:${chat}`], subject: 'u-1' });
    const context = await b.browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    const hash = new URLSearchParams({ api, chat, token: start.token }).toString();
    await page.goto(`${siteUrl}/#${hash}`);
    await page.locator('body[data-state="awaiting-approval"]').waitFor({ timeout: 15_000 });
    const turn = await page.evaluate<{ runToken: string; messageId: string }>('window.turn');
    expect(decodeJwt(turn.runToken)['scopes']).toEqual([
      `run:read:${turn.messageId}`,
      `run:decide:${turn.messageId}`,
      `thread:read:${chat}`,
      `thread:run:${chat}`,
    ]);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('body[data-state="finished"]').waitFor({ timeout: 15_000 });
    expect((await server.runs.get(turn.messageId)).status).toBe('done');

    // A second turn waits for its approval; the page follows it with EventSource.
    const chat2 = `${chat}-2`;
    const start2 = await server.tokens.mint({ scopes: [`thread:run:${chat2}`], subject: 'u-1' });
    await page.evaluate(
      async ([chatId, token]) => {
        const w = globalThis as unknown as {
          baton: {
            startTurn(
              c: string,
              t: string,
              m: string,
            ): Promise<{ runToken: string; messageId: string }>;
            follow(r: string, t: string): Promise<{ opened: number }>;
          };
          turn2: unknown;
          followed: Promise<{ opened: number }>;
        };
        const turn2 = await w.baton.startTurn(chatId!, token!, 'deploy please');
        w.turn2 = turn2;
        w.followed = w.baton.follow(turn2.messageId, turn2.runToken);
      },
      [chat2, start2.token],
    );
    await page.waitForFunction('window.followOpened === 1', undefined, { timeout: 10_000 });
    const turn2 = await page.evaluate<{ runToken: string; messageId: string }>('window.turn2');
    const revokedAt = Date.now();
    await server.tokens.revoke({ tokenId: decodeJwt(turn2.runToken).jti! });
    const followed = await page.evaluate<{ opened: number }>('window.followed');
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
    // Closed by the API, and the browser's reconnect was refused (401): it never opened again.
    expect(followed.opened).toBe(1);
    const refused = await page.evaluate<{ status: number }>('window.baton.approve(window.turn2)');
    expect(refused.status).toBe(401);
    expect(problems).toEqual([]);
    await server.runs.cancel(turn2.messageId);
    await context.close();
  }, 60_000);

  it('opens the console read-only for one run with a link that carries its token', async () => {
    const { runId } = await server.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    const link = await server.tokens.mint({ scopes: [`run:read:${runId}`] });
    const context = await b.browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${api}/console/#/runs/${encodeURIComponent(runId)}?token=${link.token}`);
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor({ timeout: 15_000 });
    await page.getByTestId('run-status').getByText('waiting').waitFor({ timeout: 15_000 });
    expect(page.url()).not.toContain(link.token);
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'Waiting for a decision' }).count()).toBe(0);
    await page.getByText('Read-only link').waitFor();
    expect(problems).toEqual([]);
    await server.runs.cancel(runId);
    await context.close();
  }, 60_000);
});
