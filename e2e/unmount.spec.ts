/**
 * Unmounting an orphan from the dashboard: a CSI volume left mounted for a pod that is gone
 * (its TearDown keeps failing at the driver). A refused unmount shows the agent's own reason and
 * checks; once the driver works again the unmount succeeds and the volume leaves the node.
 */
import { E2E_NAMESPACE } from './stack-info.ts';
import {
  clearDriverFault,
  deletePod,
  driverCalls,
  expect,
  newPod,
  openLive,
  podMounts,
  podPath,
  saveScreenshot,
  setDriverFault,
  snapshot,
  test,
  waitForAgent,
  writeClaim,
  writePod,
} from './fixtures.ts';

test('unmounting an orphan works, and a refused unmount shows the agent’s reason', async ({ page }) => {
  // Arrange: a pod with a CSI volume, mounted; then the driver fails NodeUnpublishVolume and the
  // pod goes, so its volume stays mounted for a pod nobody wants: an orphan.
  const volumeHandle = await writeClaim('e2e-node-a', 'orphan-data');
  const orphan = newPod('e2e-node-a', 'orphan-0', { data: { persistentVolumeClaim: { claimName: 'orphan-data' } } });
  await writePod(orphan);
  await waitForAgent('e2e-node-a', 'the CSI volume is mounted', (s) => podMounts(s, orphan.uid).get('data') === 'mounted');
  await setDriverFault('NodeUnpublishVolume', { code: 'INTERNAL', message: 'e2e: target is busy' });
  try {
    await deletePod(orphan);
    await waitForAgent('e2e-node-a', 'the TearDown failed', (s) => s.desired.pods.every((p) => p.uid !== orphan.uid) && s.operations.some((o) => o.podUid === orphan.uid && o.state === 'backoff'));
    await openLive(page, podPath('e2e-node-a', orphan.uid));
    const card = page.getByRole('article', { name: 'data' });
    await expect(page.getByText('not in the desired world (its volumes are being unmounted)').filter({ visible: true })).toBeVisible();
    await expect(card.locator('pre.error-block')).toContainText('e2e: target is busy');
    // Anchored: the card's Retry now (of the unmount) names the unmount in its accessible name too.
    const unmount = card.getByRole('button', { name: /^Unmount volume / });
    await expect(unmount).toHaveAttribute('aria-disabled', 'false');

    // Act: the operator opens the unmount dialog, but before confirming the pod comes back.
    await unmount.click();
    const dialog = page.getByRole('dialog');
    await expect(dialog).toContainText('the agent first checks that the pod is gone from the desired state');
    await writePod(orphan);
    await waitForAgent('e2e-node-a', 'the pod is desired again', (s) => s.desired.pods.some((p) => p.uid === orphan.uid));
    await dialog.getByRole('button', { name: 'Unmount' }).click();

    // Assert: the agent refused (409) and the dialog shows its reason and its failed check.
    const refusal = dialog.getByRole('alert');
    await expect(refusal).toContainText('The agent refused (409)');
    await expect(refusal).toContainText(`pod ${orphan.uid} still wants volume data`);
    await expect(refusal.getByRole('listitem').filter({ hasText: 'pod-not-desired' })).toContainText(`pod ${E2E_NAMESPACE}/orphan-0 is in the desired state and wants this volume`);
    await saveScreenshot(page, 'pod-unmount-refused');
    await dialog.getByRole('button', { name: 'Close' }).click();
    expect((await snapshot('e2e-node-a')).audit.at(-1)).toMatchObject({ action: 'unmount', result: 'refused' });

    // Arrange: the pod goes again; its TearDown fails again until the backoff window is long
    // enough that the reconciler will not retry by itself while the operator acts. Then the
    // driver is repaired.
    await deletePod(orphan);
    await waitForAgent('e2e-node-a', 'the TearDown is in a backoff of at least 8 s', (s) =>
      s.desired.pods.every((p) => p.uid !== orphan.uid) && s.operations.some((o) => o.podUid === orphan.uid && o.state === 'backoff' && o.retryAt !== null && o.retryAt - Date.now() >= 6_000),
    );
    await clearDriverFault('NodeUnpublishVolume');

    // Act
    await expect(unmount).toHaveAttribute('aria-disabled', 'false');
    await unmount.click();
    await dialog.getByRole('button', { name: 'Unmount' }).click();

    // Assert: the agent ran the TearDown for this request, and the orphan leaves the node.
    const result = dialog.getByRole('status');
    await expect(result).toContainText('Outcome: unmounted');
    await expect(result.getByRole('listitem').filter({ hasText: 'pod-not-desired' })).toContainText('pod is not in the desired state');
    await saveScreenshot(page, 'pod-unmount-done');
    await dialog.getByRole('button', { name: 'Close' }).click();
    expect((await snapshot('e2e-node-a')).audit.at(-1)).toMatchObject({ action: 'unmount', result: 'succeeded' });
    const unpublished = (await driverCalls(volumeHandle)).filter((c) => c.method === 'NodeUnpublishVolume');
    expect(unpublished.at(-1)?.code).toBe('OK');
    // The pod is gone, and still named by its events.
    await expect(page.getByRole('heading', { name: `Pod ${E2E_NAMESPACE}/${orphan.name} is gone` })).toBeVisible({ timeout: 30_000 });
  } finally {
    await clearDriverFault('NodeUnpublishVolume');
    await deletePod(orphan);
  }
  await waitForAgent('e2e-node-a', 'the volume left the node', (s) => !s.actual.volumes.some((v) => v.uniqueVolumeName.endsWith(volumeHandle)));
});
