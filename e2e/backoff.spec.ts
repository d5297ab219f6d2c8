/**
 * A hostPath volume whose directory is missing fails into exponential backoff: the pod page shows
 * the agent's error and a countdown that decreases, and "Retry now" makes the agent try again at
 * once (before the backoff deadline), as the agent's own state confirms.
 */
import { mkdir } from 'node:fs/promises';
import { deletePod, expect, podMounts, podPath, saveScreenshot, snapshot, test, waitForAgent, writeStuckHostPathPod } from './fixtures.ts';

/** Seconds in a countdown text such as `retry in 0:07`; null for other texts. */
function countdownSeconds(text: string | null): number | null {
  const m = /retry in (\d+):(\d{2})/.exec(text ?? '');
  return m === null ? null : Number(m[1]) * 60 + Number(m[2]);
}

test('a failing hostPath shows a decreasing countdown, and Retry now triggers a new attempt', async ({ page }) => {
  // Arrange: a hostPath of type Directory that does not exist yet.
  const { pod: shipper, hostDir, isMount } = await writeStuckHostPathPod('e2e-node-b', 'log-shipper-0', 'backoff-logs');
  try {
    // Wait until the backoff window is long enough (4 s) for the countdown to be watched.
    await waitForAgent('e2e-node-b', 'the mount is in backoff with a window of at least 4 s', (s) => {
      const op = s.operations.find(isMount);
      return op !== undefined && op.state === 'backoff' && op.durationBeforeRetryMs >= 4_000;
    });

    // Act
    await page.goto(podPath('e2e-node-b', shipper.uid));

    // Assert: the agent's error, verbatim, and a countdown that goes down.
    const card = page.getByRole('article', { name: 'logs' });
    await expect(card.locator('.pipeline-card__header [data-state]')).toHaveAttribute('data-state', 'backoff');
    await expect(card.locator('pre.error-block')).toContainText(`hostPath type check failed: ${hostDir} is not a directory`);
    const timer = card.getByRole('timer');
    let first = -1;
    await expect
      .poll(async () => {
        first = countdownSeconds(await timer.textContent()) ?? -1;
        return first;
      }, { message: 'a countdown of at least 2 s' })
      .toBeGreaterThanOrEqual(2);
    await expect.poll(async () => countdownSeconds(await timer.textContent()), { message: 'the countdown decreases', timeout: 3_000, intervals: [100] }).toBeLessThan(first);
    await saveScreenshot(page, 'pod-backoff');

    // Act: Retry now, while the backoff still has a few seconds to run.
    const before = await waitForAgent('e2e-node-b', 'the mount waits at least 3 s more', (s) => {
      const op = s.operations.find(isMount);
      return op !== undefined && op.state === 'backoff' && op.retryAt !== null && op.retryAt - Date.now() >= 3_000 ? op : undefined;
    });
    await expect(card.getByRole('button', { name: 'Retry now' })).toHaveAttribute('aria-disabled', 'false');
    await card.getByRole('button', { name: 'Retry now' }).click();
    const dialog = page.getByRole('dialog');
    await expect(dialog).toContainText(`clears the backoff of volume_mount for volume ${before.volume}`);
    await dialog.getByRole('button', { name: 'Retry now' }).click();

    // Assert: the agent cleared the backoff and tried again at once, long before the old deadline
    // (the attempt fails again: the directory is still missing).
    await expect(dialog.locator('.result[role="status"]')).toContainText('Backoff cleared');
    // The dialog follows the retry live: the attempt failed again, with the same error.
    await expect(dialog.locator('.retry-progress[role="status"]')).toContainText('failed again with the same error');
    const after = await waitForAgent('e2e-node-b', 'a new attempt failed', (s) => {
      const op = s.operations.find(isMount);
      return op !== undefined && op.lastErrorAt !== null && op.lastErrorAt > (before.lastErrorAt ?? 0) ? op : undefined;
    });
    expect(after.lastErrorAt ?? Number.POSITIVE_INFINITY).toBeLessThan(before.retryAt ?? 0);
    expect((await snapshot('e2e-node-b')).audit.at(-1)).toMatchObject({ action: 'retry', result: 'succeeded' });
    await dialog.getByRole('button', { name: 'Close' }).click();
    // The page follows the agent's failure count.
    await expect
      .poll(async () => {
        const op = (await snapshot('e2e-node-b')).operations.find(isMount);
        const shown = await card.locator('.blocking').textContent();
        return op !== undefined && new RegExp(`\\b${op.failures} failures?\\b`).test(shown ?? '');
      })
      .toBe(true);

    // Act: the directory appears.
    await mkdir(hostDir, { recursive: true });

    // Assert: mounted at the next retry.
    await expect(card.locator('.pipeline-card__header [data-state]')).toHaveAttribute('data-state', 'ready');
    expect(podMounts(await snapshot('e2e-node-b'), shipper.uid).get('logs')).toBe('mounted');
    await saveScreenshot(page, 'pod-backoff-recovered');
  } finally {
    await deletePod(shipper);
  }
  await waitForAgent('e2e-node-b', 'the pod is torn down', (s) => podMounts(s, shipper.uid).size === 0 && !s.operations.some(isMount));
});
