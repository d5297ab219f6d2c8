/**
 * Observe mode in the dashboard: the node page of the observe-mode agent (e2e/observer.ts)
 * shows what the "kubelet" still has to do with its own backoff countdown, the orphaned pod
 * directories, and the truth diff; a dry run changes nothing, and the guarded cleanup of an
 * orphan works through the dashboard while a live pod's directory stays untouched (with real
 * mounts; without them the observer has no --allow-orphan-cleanup and the actions are disabled).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { E2E_OBSERVER, stackInfo } from './stack-info.ts';
import { expect, saveScreenshot, test } from './fixtures.ts';

test('the observer node shows the kubelet’s plan, orphans and truth diff, and cleans up an orphan through the guarded action', async ({ page }) => {
  const rootDir = stackInfo().observer.rootDir;
  await page.goto(`/nodes/${E2E_OBSERVER}`);

  // The plan: pod b's emptyDir mount is outstanding, with the kubelet's backoff from its event.
  const plan = page.locator('#observe-plan');
  // (Its first step, verify_controller_attached_volume, is a row of its own.)
  const row = plan.getByRole('row').filter({ hasText: 'kubernetes.io/empty-dir/uid-b-scratch' }).filter({ hasText: 'volume_mount' });
  await expect(row.getByRole('link', { name: 'default/b' })).toHaveAttribute('href', `/nodes/${E2E_OBSERVER}/pods/uid-b`);
  await expect(row).toContainText('mkdir: no space left on device');
  await expect(row).toContainText('1m4s');
  await expect(plan).toContainText('never mounts or unmounts');

  // Orphans: uid-o1 still has a mount, uid-o2 only an empty directory; a live pod is not listed.
  const orphans = page.locator('#observe-orphans');
  const o1 = orphans.getByRole('article').filter({ has: page.getByRole('heading', { name: 'Pod uid-o1' }) });
  await expect(o1).toContainText(join(rootDir, 'pods/uid-o1/volumes/kubernetes.io~secret/tok'));
  await expect(orphans.getByRole('article').filter({ has: page.getByRole('heading', { name: 'Pod uid-o2' }) })).toBeVisible();
  await expect(orphans.getByRole('heading', { name: 'Pod uid-a' })).toHaveCount(0);

  // Truth diff: the failed CSI attachment.
  await expect(page.locator('#observe-truth')).toContainText('too many disks on the node');
  await saveScreenshot(page, 'observer-node');

  // The managed-mode Unmount is offered nowhere: the mounts are the kubelet's.
  const unmountButtons = page.getByRole('button', { name: 'Unmount' });
  await expect(unmountButtons.first()).toBeVisible();
  for (const button of await unmountButtons.all()) await expect(button).toHaveAttribute('aria-disabled', 'true');

  // Without real mounts the observer runs without --allow-orphan-cleanup (the cleanup needs the
  // kernel's mount table): the actions are offered as not available, with the reason.
  if (!stackInfo().mountsAllowed) {
    await expect(o1).toContainText('Not available: the agent runs without --allow-orphan-cleanup');
    await expect(o1.getByRole('button', { name: 'Clean up' })).toHaveAttribute('aria-disabled', 'true');
    return;
  }

  // Dry run: the plan, nothing changed.
  await o1.getByRole('button', { name: 'Dry run' }).click();
  await expect(o1.getByRole('status')).toContainText('Dry run for pod uid-o1: would unmount 1 mount');
  await expect(o1.getByRole('status')).toContainText('Nothing was changed.');

  // Clean up, confirmed: unmounted, empty directories removed, the file kept.
  await o1.getByRole('button', { name: 'Clean up' }).click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toContainText('files are never deleted');
  await dialog.getByRole('button', { name: 'Clean up' }).click();
  await expect(dialog.getByRole('status')).toContainText('Cleaned up pod uid-o1: unmounted 1 mount');
  await saveScreenshot(page, 'observer-cleanup');
  await dialog.getByRole('button', { name: 'Close' }).click();

  // On disk: the orphan's file is still there, the live pod's data untouched.
  expect(await readFile(join(rootDir, 'pods/uid-o1/volumes/kubernetes.io~empty-dir/data/left-behind.log'), 'utf8')).toBe('old data');
  expect(await readFile(join(rootDir, 'pods/uid-a/volumes/kubernetes.io~empty-dir/cache/state.db'), 'utf8')).toBe('live data');
  // The next refresh sees no mount under uid-o1 any more: only its data is left.
  await expect(o1).toContainText('none at or below the pod directory');
  await expect(o1).toContainText('volume data left');
});
