/**
 * Runbook embeds: /embed/... renders inside an iframe of an allowed origin (the build's
 * VOLUMESCOPE_FRAME_ANCESTORS, see e2e/e2e-build.mjs) and is refused inside any other; the full
 * pages refuse every frame. The framing pages come from a small local server that answers on
 * every host name, so `runbooks.localhost` and `elsewhere.localhost` are two real origins.
 */
import { createServer, type Server } from 'node:http';
import type { ConsoleMessage, Page } from '@playwright/test';
import { E2E_NAMESPACE } from './stack-info.ts';
import { E2E_FRAME_ANCESTORS, FOREIGN_HOST, RUNBOOK_HOST } from './e2e-build.mjs';
import { basicVolumes, deletePod, expect, newPod, podMounts, saveScreenshot, test, waitForAgent, writePod } from './fixtures.ts';

/** Serves `/runbook?frame=<url>&frame=<url>`: a page with one titled iframe per URL. */
async function startRunbookServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://runbook');
    const frames = url.searchParams.getAll('frame');
    const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><title>Runbook</title><h1>Runbook: a volume is stuck</h1>${frames
        .map((f, i) => `<iframe title="frame-${i}" src="${escape(f)}" width="620" height="420"></iframe>`)
        .join('')}`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

/** Collects the console messages about a blocked frame. */
function framingViolations(page: Page): string[] {
  const seen: string[] = [];
  page.on('console', (m: ConsoleMessage) => {
    if (m.text().includes('frame-ancestors')) seen.push(m.text());
  });
  return seen;
}

test('the embed renders inside an iframe of an allowed origin and is refused by any other', async ({ page, baseURL }) => {
  // Arrange: a pod to embed, and the pretend wiki.
  const web = newPod('e2e-node-a', 'embedded-0', basicVolumes);
  await writePod(web);
  const runbooks = await startRunbookServer();
  const runbook = (host: string, frames: string[]) => `http://${host}:${runbooks.port}/runbook?${frames.map((f) => `frame=${encodeURIComponent(f)}`).join('&')}`;
  try {
    await waitForAgent('e2e-node-a', 'the pod is mounted', (s) => podMounts(s, web.uid).size === 3);
    const dashboard = baseURL ?? '';
    const nodeEmbed = `${dashboard}/embed/nodes/e2e-node-a`;
    const podEmbed = `${dashboard}/embed/nodes/e2e-node-a/pods/${web.uid}`;

    // Act: the runbook wiki frames the node and the pod embeds.
    const allowedViolations = framingViolations(page);
    await page.goto(runbook(RUNBOOK_HOST, [nodeEmbed, podEmbed]));

    // Assert: both render, live.
    const node = page.frameLocator('iframe[title="frame-0"]');
    await expect(node.getByRole('heading', { level: 1, name: 'e2e-node-a' })).toBeVisible();
    await expect(node.getByTestId('connection-status')).toHaveAttribute('data-phase', 'live');
    const pod = page.frameLocator('iframe[title="frame-1"]');
    await expect(pod.getByRole('heading', { level: 1, name: `${E2E_NAMESPACE}/embedded-0` })).toBeVisible();
    await expect(pod.getByText('unmounted volumes=[], unattached volumes=[]')).toBeVisible();
    expect(allowedViolations).toEqual([]);
    await saveScreenshot(page, 'embed-allowed-origin');

    // Act: another origin frames the same embed, and the wiki frames a full page.
    const foreign = await page.context().newPage();
    const foreignViolations = framingViolations(foreign);
    await foreign.goto(runbook(FOREIGN_HOST, [nodeEmbed]));
    const fullPage = await page.context().newPage();
    const fullPageViolations = framingViolations(fullPage);
    await fullPage.goto(runbook(RUNBOOK_HOST, [`${dashboard}/nodes/e2e-node-a`]));

    // Assert: Chromium refuses both frames because of the dashboard's policy.
    await expect.poll(() => foreignViolations, { message: 'the foreign origin is refused' }).toEqual([expect.stringContaining(`frame-ancestors ${E2E_FRAME_ANCESTORS}`)]);
    await expect.poll(() => fullPageViolations, { message: 'a full page refuses every frame' }).toEqual([expect.stringContaining("frame-ancestors 'none'")]);
    for (const p of [foreign, fullPage]) {
      await expect(p.getByRole('heading', { level: 1, name: 'Runbook: a volume is stuck' })).toBeVisible();
      await expect(p.frameLocator('iframe[title="frame-0"]').getByRole('heading', { name: 'e2e-node-a' })).toHaveCount(0);
    }
    await saveScreenshot(foreign, 'embed-refused-origin');

    // The embeds on their own, at the size a runbook gives them.
    await page.setViewportSize({ width: 600, height: 400 });
    await page.goto(nodeEmbed);
    await expect(page.getByRole('heading', { level: 1, name: 'e2e-node-a' })).toBeVisible();
    await saveScreenshot(page, 'embed-node');
    await page.goto(podEmbed);
    await expect(page.getByRole('heading', { level: 1, name: `${E2E_NAMESPACE}/embedded-0` })).toBeVisible();
    await saveScreenshot(page, 'embed-pod');
  } finally {
    await new Promise<void>((resolve) => runbooks.server.close(() => { resolve(); }));
    await deletePod(web);
  }
  await waitForAgent('e2e-node-a', 'the pod is torn down', (s) => podMounts(s, web.uid).size === 0);
});
