/**
 * A viewer and an operator in the real dashboard (`next start`, Chromium) against a real
 * kube-apiserver and an agent in webhook mode: each logs in on /login with a ServiceAccount
 * token (bound to deploy/'s volumescope-viewer or volumescope-operator), the dashboard reviews it
 * with a SelfSubjectReview and sends it to the agent.
 *
 * - The viewer reads the node page, sees it marked read-only with the reason, and its "Force
 *   resync" refused with that reason (every action button reads the same permissions, Unmount
 *   and Retry included); its forced unmount and resync requests, sent from the page with the
 *   session cookie and the CSRF header, get the agent's 403 through the dashboard.
 * - The operator's buttons are enabled.
 * - No response the browser receives contains either token.
 *
 * The dashboard's own client configuration is its ServiceAccount (discovery rights only, as in
 * deploy/). The build is reused when current (`next build` runs first otherwise, 2–4 min).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from '@playwright/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDashboardBuild } from '../../scripts/dashboard-build.mjs';
import type { ClusterAgent } from '../../scripts/cluster/cluster.ts';
import { startDashboard } from '../../scripts/demo/dashboard.ts';
import { freePort, type ManagedProcess } from '../../scripts/demo/process.ts';
import { LOOPBACK } from '../../scripts/demo/stack.ts';
import { createToken, createViewerAndOperator } from './user-accounts.ts';
import { cluster, facts, versionTag } from './cluster-context.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const API = versionTag('kube-apiserver');
const NS = 'dashboard-viewer-test';
const NODE_NAME = 'agent-viewer';

let agent: ClusterAgent;
let dashboard: ManagedProcess;
let base = '';
let browser: Browser;
const tokens = { viewer: '', operator: '' };
/** Every response body (and headers) the browser received, for the token check. */
const received: { url: string; text: string }[] = [];

/** A fresh browser context logged in with `token` through the login form, on the node page. */
async function loggedIn(token: string): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('response', (response) => {
    void response.allHeaders().then((h) => received.push({ url: `${response.url()} (headers)`, text: JSON.stringify(h) }));
    if (!(response.headers()['content-type'] ?? '').includes('event-stream')) {
      void response.body().then(
        (b) => received.push({ url: response.url(), text: b.toString('latin1') }),
        () => undefined,
      );
    }
  });
  await page.goto(`${base}/nodes/${NODE_NAME}`);
  expect(page.url()).toBe(`${base}/login?next=%2Fnodes%2F${NODE_NAME}`);
  await page.getByLabel('Kubernetes bearer token').fill(token);
  await page.getByRole('button', { name: 'Log in with token' }).click();
  await page.waitForURL(`${base}/nodes/${NODE_NAME}`);
  return page;
}

/** A POST from the page itself (its cookie, Origin and the CSRF header): what a forced click would send. */
async function forcedPost(page: Page, path: string, body: unknown): Promise<{ status: number; text: string }> {
  return page.evaluate(
    async ({ path, body }) => {
      const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-volumescope-request': '1' }, body: JSON.stringify(body) });
      return { status: res.status, text: await res.text() };
    },
    { path, body },
  );
}

beforeAll(async () => {
  ensureDashboardBuild({ frameAncestors: null });
  Object.assign(tokens, await createViewerAndOperator(NS));
  agent = await cluster.startAgent({ nodeName: NODE_NAME, args: ['--authentication-token-webhook', '--authorization-mode=Webhook'] });
  const port = await freePort(LOOPBACK);
  base = `http://${LOOPBACK}:${String(port)}`;
  dashboard = await startDashboard({
    repoRoot: REPO,
    host: LOOPBACK,
    port,
    logFile: join(facts.stateDir, 'dashboard-viewer.log'),
    agents: [{ name: NODE_NAME, url: agent.facts.url, tokenFile: agent.facts.tokenFile }],
    env: { VOLUMESCOPE_LOCAL_SESSION: 'off', KUBECONFIG: cluster.tokenKubeconfig('dashboard-viewer', await createToken('volumescope-dashboard', 'volumescope')) },
  });
  browser = await chromium.launch({ executablePath: process.env['VOLUMESCOPE_CHROMIUM'] ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
});

afterAll(async () => {
  await browser.close();
  await dashboard.stop(10_000);
  const exit = await agent.stop();
  expect(exit?.code, await agent.log()).toBe(0);
});

describe(`the dashboard acts as the logged-in user (${API})`, () => {
  it(`a viewer sees the node read-only, its actions refused with the reason, and a forced unmount gets the agent's 403 (${API})`, async () => {
    const page = await loggedIn(tokens.viewer);
    const user = `system:serviceaccount:${NS}:viewer`;
    await page.getByText(`Logged in as ${user}`).waitFor();
    const note = page.getByRole('note').filter({ hasText: 'Read-only for' });
    await note.waitFor();
    expect(await note.textContent()).toContain(`${user} may not update nodes/volumemanager of ${NODE_NAME}`);
    const resync = page.getByRole('button', { name: `Force resync of node ${NODE_NAME}` });
    await expect.poll(() => resync.getAttribute('aria-disabled'), { timeout: 20_000 }).toBe('true');
    // The button and its description are read in one step in the page: a re-render between two
    // reads may give the description a new id.
    const reason = () => resync.evaluate((button) => document.getElementById(button.getAttribute('aria-describedby') ?? '')?.textContent ?? '');
    await expect.poll(reason, { timeout: 20_000 }).toContain('may not update nodes/volumemanager');
    const unmount = await forcedPost(page, `/api/agents/${NODE_NAME}/unmount`, { podUid: '00000000-0000-0000-0000-000000000000', volume: 'kubernetes.io/empty-dir/x' });
    expect(unmount.status).toBe(403);
    expect(unmount.text).toContain(`user=${user}, verb=update, resource=nodes, subresource=volumemanager`);
    expect((await forcedPost(page, `/api/agents/${NODE_NAME}/resync`, undefined)).status).toBe(403);
    await page.context().close();
  });

  it(`an operator's actions are enabled, and its resync goes through as the operator (${API})`, async () => {
    const page = await loggedIn(tokens.operator);
    const resync = page.getByRole('button', { name: `Force resync of node ${NODE_NAME}` });
    await resync.waitFor();
    // What the page's permission check answers (the same route the buttons read), then the button.
    const permissions: unknown = await page.evaluate(async (path) => (await fetch(path)).json() as Promise<unknown>, `/api/agents/${NODE_NAME}/permissions`);
    expect(permissions).toEqual({ user: `system:serviceaccount:${NS}:operator`, get: true, update: true, reason: null });
    expect(await resync.getAttribute('aria-disabled')).toBe('false');
    expect(await page.getByRole('note').filter({ hasText: 'Read-only for' }).count()).toBe(0);
    expect((await forcedPost(page, `/api/agents/${NODE_NAME}/resync`, undefined)).status).toBe(200);
    await page.context().close();
  });

  it(`no response the browser received contains a user's token (${API})`, () => {
    expect(received.length).toBeGreaterThan(10);
    const leaks = received.filter((r) => r.text.includes(tokens.viewer) || r.text.includes(tokens.operator)).map((r) => r.url);
    expect(leaks).toEqual([]);
  });
});
