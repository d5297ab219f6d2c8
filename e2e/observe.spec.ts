/**
 * Observe mode in the dashboard: the node page of the observe-mode agent (e2e/observer.ts)
 * shows what the "kubelet" still has to do with its own backoff countdown, the orphaned pod
 * directories, and the truth diff; the pod page shows the kubelet's error and backoff; an orphan
 * still mounted is left to the kubelet (its dry run is refused with the check), a dry run changes
 * nothing, and the guarded cleanup of an unmounted orphan works through the dashboard while a
 * live pod's directory stays untouched (with real mounts; without them the observer has no
 * --allow-orphan-cleanup and the actions are disabled).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { E2E_OBSERVER, stackInfo } from './stack-info.ts';
import { expect, openLive, saveScreenshot, test } from './fixtures.ts';

test('the observer node shows the kubelet’s plan, orphans and truth diff, and cleans up an orphan through the guarded action', async ({ page }) => {
  const rootDir = stackInfo().observer.rootDir;
  await openLive(page, `/nodes/${E2E_OBSERVER}`);

  // The plan: pod b's emptyDir mount is outstanding, with the kubelet's backoff from its event.
  const plan = page.locator('#observe-plan');
  // The kubelet's event says SetUp failed, so the volume's earlier steps are not outstanding.
  await expect(plan.getByRole('row').filter({ hasText: 'verify_controller_attached_volume' }).filter({ hasText: 'uid-b-scratch' })).toHaveCount(0);
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

  // The managed-mode actions are offered nowhere: the mounts and retries are the kubelet's.
  await expect(page.getByRole('button', { name: /^Unmount/ })).toHaveCount(0);
  await expect(page.getByRole('button', { name: /^Retry now/ })).toHaveCount(0);
  await expect(page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: /Kubelet’s outstanding work/ })).toHaveAttribute('href', '#observe-plan');

  // Without real mounts the observer runs without --allow-orphan-cleanup (the cleanup needs the
  // kernel's mount table): the actions are offered as not available, with the reason.
  if (!stackInfo().mountsAllowed) {
    await expect(o1).toContainText('Not available: the agent runs without --allow-orphan-cleanup');
    await expect(o1.getByRole('button', { name: 'Clean up' })).toHaveAttribute('aria-disabled', 'true');
    return;
  }

  // o1 is still mounted: its verdict leaves the unmount to the kubelet, so Clean up is not
  // offered and its dry run is refused with that check.
  await expect(o1.getByRole('button', { name: 'Clean up' })).toHaveAttribute('aria-disabled', 'true');
  await expect(o1).toContainText('Clean up not available: the kubelet has to unmount first');
  await o1.getByRole('button', { name: 'Dry run' }).click();
  await expect(o1).toContainText('The agent refused (409); nothing was done');
  await expect(o1).toContainText('Left to the kubelet to unmount first? yes');

  // o2: the dry run says it unmounts nothing and changes nothing; the cleanup removes it.
  const o2 = orphans.getByRole('article').filter({ has: page.getByRole('heading', { name: 'Pod uid-o2' }) });
  await o2.getByRole('button', { name: 'Dry run' }).click();
  await expect(o2.getByRole('status')).toContainText('Dry run for pod uid-o2: would unmount nothing');
  await expect(o2.getByRole('status')).toContainText('Nothing was changed.');
  await o2.getByRole('button', { name: 'Clean up' }).click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toContainText('unmounts nothing below');
  await expect(dialog).toContainText('files are never deleted');
  await dialog.getByRole('button', { name: 'Clean up' }).click();
  await expect(dialog.getByRole('status')).toContainText('Cleaned up pod uid-o2: unmounted 0 mounts');
  await saveScreenshot(page, 'observer-cleanup');
  await dialog.getByRole('button', { name: 'Close' }).click();

  // On disk: o1's file and mount are still there, the live pod's data untouched; o2 is gone.
  expect(await readFile(join(rootDir, 'pods/uid-o1/volumes/kubernetes.io~empty-dir/data/left-behind.log'), 'utf8')).toBe('old data');
  expect(await readFile(join(rootDir, 'pods/uid-a/volumes/kubernetes.io~empty-dir/cache/state.db'), 'utf8')).toBe('live data');
  await expect(orphans.getByRole('heading', { name: 'Pod uid-o2' })).toHaveCount(0);
  await expect(o1).toContainText('still mounted');
});

test('the pod page of a pod stuck in the kubelet carries the kubelet’s error, event and backoff', async ({ page }) => {
  await page.goto(`/nodes/${E2E_OBSERVER}/pods/uid-b`);
  const card = page.getByRole('article').filter({ has: page.getByRole('heading', { name: 'scratch' }) });
  await expect(card).toContainText('MountVolume.SetUp failed for this volume');
  await expect(card).toContainText('mkdir: no space left on device');
  await expect(card).toContainText('durationBeforeRetry 1m4s');
  await expect(card).not.toContainText('not verified yet');
  await expect(page.locator('#events')).toContainText('FailedMount');
  await saveScreenshot(page, 'observer-pod');
});
