/**
 * The three incidents an operator meets first, read as the operator reads them (a screenshot of
 * each state goes to e2e/artifacts/):
 * 1. a pod stuck on a failing hostPath: which stage blocks, the cause, the next retry, how long it
 *    has been stuck, and Retry now driven by the keyboard alone (focus into the dialog, kept there
 *    while tabbing, and back on the button that opened it, also when the retry re-rendered it);
 * 2. the node after an agent restart: the operation's history (first failure, attempts) is the
 *    same after the restart, not started afresh;
 * 3. orphans on the observe-mode node: the kubelet's outstanding work is one number on the
 *    overview card, in the node's counts, in the sections list and in the plan's rows.
 */
import type { Page } from '@playwright/test';
import { E2E_OBSERVER } from './stack-info.ts';
import { deletePod, expect, openLive, podMounts, podPath, restartAgent, saveScreenshot, snapshot, test, waitForAgent, writeStuckHostPathPod } from './fixtures.ts';

/** The focused element's accessible name as the page gives it (aria-label, else its text). */
async function focusedName(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement;
    return el === null ? '' : (el.getAttribute('aria-label') ?? el.textContent ?? '').trim();
  });
}

/** Presses Tab until the focused element's name passes `wanted`; fails after `max` presses. */
async function tabTo(page: Page, wanted: (name: string) => boolean, max = 80): Promise<string> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const name = await focusedName(page);
    if (wanted(name)) return name;
  }
  throw new Error(`no focusable element matched after ${max} Tab presses`);
}

const focusInDialog = (page: Page): Promise<boolean> => page.evaluate(() => document.activeElement?.closest('dialog[open]') != null);

test('incident 1: a pod stuck on a failing hostPath: stage, cause, next retry, stuck for, and Retry now from the keyboard alone', async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  // Arrange: a hostPath of type Directory that does not exist.
  const { pod, hostDir, isMount } = await writeStuckHostPathPod('e2e-node-a', 'stuck-0', 'incident-stuck');
  try {
    // A window of 8 s with more than 5 s left: the reconciler's own retry cannot start (and
    // disable the card's Retry now button) while the test reads the card and tabs to the button.
    await waitForAgent('e2e-node-a', 'the mount in a backoff window of 8 s with more than 5 s left', (s) => {
      const op = s.operations.find(isMount);
      return op !== undefined && op.state === 'backoff' && op.durationBeforeRetryMs >= 8_000 && (op.retryAt ?? 0) - Date.now() > 5_000;
    });

    // Act: the pod page.
    await openLive(page, podPath('e2e-node-a', pod.uid));

    // Assert: the answers, in words.
    const card = page.getByRole('article', { name: 'logs' });
    await expect(card.locator('li[aria-current="step"]')).toContainText('mounted into pod');
    await expect(card.getByTestId('error-cause').first()).toContainText(`${hostDir} is not a directory`);
    await expect(card.getByRole('timer')).toContainText(/retry in \d+:\d{2}|retrying/);
    await expect(card.getByTestId('operation-history-line')).toContainText(/stuck for \d+ s/);
    await expect(card.getByTestId('operation-history-line')).toContainText(/\d+ attempts in all/);
    await saveScreenshot(page, 'incident-stuck-pod');

    // Retry now with the keyboard alone: Tab to the card's button (its name says what it retries).
    const trigger = await tabTo(page, (name) => name.startsWith('Retry now: ') && name.includes('volume logs'));
    expect(trigger).toContain('e2e/stuck-0');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await expect(dialog).toBeVisible();
    await expect(dialog.getByRole('heading').first()).toContainText('logs');
    expect(await focusInDialog(page)).toBe(true);
    // Focus stays inside the dialog while tabbing; the confirm button is reached.
    await tabTo(page, (name) => name === 'Retry now', 10);
    expect(await focusInDialog(page)).toBe(true);
    await page.keyboard.press('Enter');
    // What happened next, live: the retry ran and failed again with the same error.
    await expect(dialog.locator('.retry-progress[role="status"]')).toContainText('failed again with the same error');
    await saveScreenshot(page, 'incident-stuck-retry-dialog');
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    // Focus is back on the trigger: the card's Retry now of this volume (re-rendered by the retry
    // while it ran, so found again by its focus key), not the section or the page.
    await expect.poll(() => focusedName(page), { message: 'focus returns to the Retry now button' }).toBe(trigger);
    expect(await page.evaluate(() => document.activeElement?.tagName ?? null)).toBe('BUTTON');
    expect(await page.evaluate(() => document.activeElement?.closest('article')?.getAttribute('aria-labelledby') ?? null)).toBe(await card.getAttribute('aria-labelledby'));

    // The card's commands, one click: named after its volume and pod, the pod's kubectl and the
    // agent's log about the volume from a minute before its first failure.
    await card.getByRole('button', { name: 'Copy commands: volume logs of pod e2e/stuck-0' }).click();
    await expect(card.getByRole('status').filter({ hasText: 'Copied' })).toBeVisible();
    const commands = await page.evaluate(() => navigator.clipboard.readText());
    expect(commands).toContain('kubectl -n e2e describe pod stuck-0');
    expect(commands).toMatch(/ logs --since-time=\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z .*\| grep -F kubernetes\.io\/host-path\//);
  } finally {
    await deletePod(pod);
  }
  await waitForAgent('e2e-node-a', 'the pod is torn down', (s) => podMounts(s, pod.uid).size === 0);
});

test('incident 2: after an agent restart the stuck operation keeps its history (first failure, attempts)', async ({ page }) => {
  // Arrange: a stuck hostPath with a few failed attempts.
  const { pod, isMount } = await writeStuckHostPathPod('e2e-node-a', 'stuck-1', 'incident-restart');
  try {
    const before = await waitForAgent('e2e-node-a', 'at least 3 failed attempts', (s) => {
      const h = s.operationHistory.find((e) => e.operationName === 'volume_mount' && e.podUid === pod.uid);
      return h !== undefined && h.attemptsTotal >= 3 ? h : undefined;
    });

    // Act
    await restartAgent('e2e-node-a');

    // Assert: the new process reports the same first failure and at least as many attempts.
    const after = await waitForAgent('e2e-node-a', 'the history after the restart, with a new attempt', (s) => {
      const h = s.operationHistory.find((e) => e.operationName === 'volume_mount' && e.podUid === pod.uid);
      return h !== undefined && h.attemptsTotal > before.attemptsTotal ? h : undefined;
    });
    expect(after.firstFailureAt).toBe(before.firstFailureAt);
    await page.goto(podPath('e2e-node-a', pod.uid));
    const line = page.getByRole('article', { name: 'logs' }).getByTestId('operation-history-line');
    await expect(line).toContainText(/stuck for \d+ s/);
    await expect.poll(async () => Number(/(\d+) attempts in all/.exec((await line.textContent()) ?? '')?.[1] ?? 0), { message: 'the attempts before the restart are counted' }).toBeGreaterThan(before.attemptsTotal);
    await saveScreenshot(page, 'incident-restart-pod');
    expect((await snapshot('e2e-node-a')).operations.find(isMount)?.state).toMatch(/backoff|running|pending/);
  } finally {
    await deletePod(pod);
  }
  await waitForAgent('e2e-node-a', 'the pod is torn down', (s) => podMounts(s, pod.uid).size === 0);
});

test('incident 3: the observe-mode node: one outstanding-work count on the overview, the node counts, the sections list and the plan', async ({ page }) => {
  await page.goto('/');
  const cardCount = page
    .locator('.node-card')
    .filter({ has: page.getByRole('heading', { name: E2E_OBSERVER }) })
    .getByRole('term')
    .filter({ hasText: /^outstanding \(kubelet\)$/ })
    .locator('xpath=following-sibling::*[1]');
  await expect(cardCount).toHaveText(/^\d+$/);
  const onOverview = Number(await cardCount.textContent());
  expect(onOverview).toBeGreaterThan(0);
  await saveScreenshot(page, 'incident-observe-overview');

  await page.goto(`/nodes/${E2E_OBSERVER}`);
  const nodeCount = page.getByRole('term').filter({ hasText: /^outstanding \(kubelet\)$/ }).first().locator('xpath=following-sibling::*[1]');
  await expect(nodeCount).toHaveText(String(onOverview));
  await expect(page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: `Kubelet’s outstanding work (${onOverview})` })).toHaveAttribute('href', '#observe-plan');
  // The plan's table: a header row and one row per outstanding operation.
  await expect(page.locator('#observe-plan').getByRole('table').getByRole('row')).toHaveCount(onOverview + 1);
  await expect(page.locator('#observe-orphans').getByRole('article')).not.toHaveCount(0);
  // Volumes that are uncertain only because they were rebuilt from disk do not degrade the node.
  await expect(page.locator('main')).not.toContainText('the reconciler will settle it');
  await saveScreenshot(page, 'incident-observe-node');
});
