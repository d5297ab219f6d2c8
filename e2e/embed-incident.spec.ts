/**
 * The embeds as an incident document's source, at the size a runbook frames them (600×400): the
 * failing volume comes first and its error is in view without scrolling, the healthy volumes are
 * collapsed, "Copy as Markdown" gives the failure count and time, "stuck for", the aggregated
 * events and absolute links, no page is wider than 600 px, and nothing logs a console error (the
 * favicon included).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { E2E_NAMESPACE, stackInfo } from './stack-info.ts';
import { basicVolumes, deletePod, expect, newPod, nodePath, podMounts, podPath, saveScreenshot, test, waitForAgent, writePod } from './fixtures.ts';

/** Console errors and failed requests (a missing favicon is both) seen by a page. */
function problems(page: Page): string[] {
  const seen: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') seen.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => {
    seen.push(`page error: ${e.message}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) seen.push(`${r.status()} ${r.url()}`);
  });
  return seen;
}

/** How far the document is wider than the window, in CSS pixels (0: no horizontal overflow). */
/**
 * How far the page is wider than its viewport, with the outermost elements that stick out and are
 * not clipped by an ancestor (tag, classes and right edge), so that a failure names what to fix.
 */
async function horizontalOverflow(page: Page): Promise<{ px: number; culprits: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const clips = (el: Element): boolean => {
      const style = getComputedStyle(el);
      return style.overflowX !== 'visible' || /paint|strict|content/.test(style.contain);
    };
    const culprits: string[] = [];
    for (const el of Array.from(document.body.querySelectorAll('*'))) {
      if (el.getBoundingClientRect().right <= width + 1) continue;
      let clipped = false;
      let outermost = true;
      for (let a = el.parentElement; a !== null && a !== document.body; a = a.parentElement) {
        if (clips(a)) clipped = true;
        if (a.getBoundingClientRect().right > width + 1) outermost = false;
      }
      if (!clipped && outermost) culprits.push(`${el.tagName.toLowerCase()}.${(el.getAttribute('class') ?? '').split(' ').join('.')} right=${Math.round(el.getBoundingClientRect().right)}`);
    }
    return { px: document.documentElement.scrollWidth - width, culprits: culprits.slice(0, 5) };
  });
}

const noOverflow = { px: 0, culprits: [] };

test('at 600×400 the failing volume and its error come first, healthy ones collapsed, and the Markdown is an incident summary', async ({ page, context, baseURL }) => {
  // Arrange: a pod with three healthy volumes and a hostPath whose directory is missing (it fails
  // into backoff), declared last so that only the ordering can bring it first.
  const hostDir = join(stackInfo().baseDir, 'host-data', 'embed-incident');
  await rm(hostDir, { recursive: true, force: true });
  const pod = newPod('e2e-node-b', 'incident-0', { ...basicVolumes, logs: { hostPath: { path: hostDir, type: 'Directory' } } });
  await writePod(pod);
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const seen = problems(page);
  try {
    await waitForAgent('e2e-node-b', 'the healthy volumes are mounted and the hostPath failed twice', (s) => {
      const op = s.operations.find((o) => o.operationName === 'volume_mount' && o.podUid === pod.uid);
      return podMounts(s, pod.uid).size === 3 && op !== undefined && op.failures >= 2;
    });
    await page.setViewportSize({ width: 600, height: 400 });

    // Act: the pod embed.
    await page.goto(`/embed${podPath('e2e-node-b', pod.uid)}`);

    // Assert: the failing card first, its error's cause in the viewport without scrolling.
    await expect(page.getByRole('heading', { level: 1, name: `${E2E_NAMESPACE}/incident-0` })).toBeVisible();
    const cards = page.getByRole('article');
    await expect(cards.first()).toHaveAccessibleName('logs');
    const error = cards.first().locator('.compact-error');
    await expect(error).toContainText('is not a directory');
    await expect(error).toBeInViewport({ ratio: 1 });
    expect(await page.evaluate(() => window.scrollY)).toBe(0);
    await expect(cards.first().getByTestId('operation-history-line')).toContainText(/stuck for \d+ s/);
    // The healthy volumes: a closed <details> saying how many, opened on demand.
    const healthy = page.getByTestId('embed-healthy').filter({ visible: true });
    await expect(healthy.locator('summary')).toHaveText('3 ready volumes');
    await expect(healthy).not.toHaveAttribute('open');
    await expect(cards).toHaveCount(1);
    expect(await horizontalOverflow(page)).toEqual(noOverflow);
    await saveScreenshot(page, 'embed-incident-pod');
    await healthy.locator('summary').click();
    await expect(cards).toHaveCount(4);
    expect(await horizontalOverflow(page)).toEqual(noOverflow);

    // Act: Copy as Markdown.
    await page.getByRole('button', { name: 'Copy as Markdown' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'Copied' })).toBeVisible();
    const markdown = await page.evaluate(() => navigator.clipboard.readText());

    // Assert: failures ×N since T, stuck for D, the aggregated events, absolute links.
    expect(markdown).toMatch(/failures ×\d+ since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, stuck for \d+ s/);
    expect(markdown).toMatch(/^Last events \(the latest (group|\d groups), aggregated\):$/m);
    expect(markdown).toMatch(/^- Warning FailedMount( ×\d+ over \d+ s, last|,) /m);
    const links = [...markdown.matchAll(/\]\(([^)]*)\)/g)].map((m) => m[1] ?? '');
    expect(links.length).toBeGreaterThanOrEqual(3);
    // The stack sets no VOLUMESCOPE_PUBLIC_URL: links are on the page's own origin.
    const origin = new URL(baseURL ?? '').origin;
    for (const l of links) expect(l.startsWith(`${origin}/nodes/e2e-node-b`)).toBe(true);

    // Act + Assert: the node embed lists the failing volume, with its error, in view.
    await page.goto(`/embed${nodePath('e2e-node-b')}`);
    // Visible rows only: while React streams the page, a finished boundary waits in a hidden copy.
    const row = page.getByTestId('embed-failing-row').filter({ hasText: 'incident-0', visible: true });
    await expect(row).toContainText('is not a directory');
    await expect(row).toBeInViewport();
    await expect(page.getByTestId('embed-healthy').filter({ visible: true })).not.toHaveAttribute('open');
    expect(await horizontalOverflow(page)).toEqual(noOverflow);
    await saveScreenshot(page, 'embed-incident-node');

    // No page is wider than 600 px.
    for (const path of ['/', nodePath('e2e-node-b'), podPath('e2e-node-b', pod.uid)]) {
      await page.goto(path);
      await expect(page.getByRole('heading', { level: 1 }).first()).toBeVisible();
      expect(await horizontalOverflow(page), `${path} at 600 px`).toEqual(noOverflow);
    }
    expect(seen).toEqual([]);
  } finally {
    await deletePod(pod);
  }
  await waitForAgent('e2e-node-b', 'the pod is torn down', (s) => podMounts(s, pod.uid).size === 0);
});
