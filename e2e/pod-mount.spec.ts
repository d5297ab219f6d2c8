/**
 * A new pod's volumes progress through the mount pipeline to "mounted into pod" on its pod page:
 * emptyDir (disk and memory), configMap, secret and a CSI volume of the real test driver.
 */
import { E2E_NAMESPACE } from './stack-info.ts';
import {
  basicVolumes,
  clearDriverFault,
  deletePod,
  expect,
  newPod,
  nodePath,
  podMounts,
  podPath,
  saveScreenshot,
  setDriverFault,
  test,
  waitForAgent,
  writeClaim,
  writePod,
} from './fixtures.ts';

test("a new pod's volumes progress to mounted on its pod page", async ({ page }) => {
  // Arrange: the CSI publish is held for a few seconds, so the page sees the volume on its way.
  await writeClaim('e2e-node-a', 'web-data');
  const web = newPod('e2e-node-a', 'web-0', { ...basicVolumes, memory: { emptyDir: { medium: 'Memory' } }, data: { persistentVolumeClaim: { claimName: 'web-data' } } });
  await setDriverFault('NodePublishVolume', { delayMs: 6_000, failNext: 1 });
  try {
    // Act: the pod appears; the page opens as soon as the agent knows it.
    await writePod(web);
    await waitForAgent('e2e-node-a', 'the pod is desired', (s) => s.desired.pods.some((p) => p.uid === web.uid));
    await page.goto(podPath('e2e-node-a', web.uid));

    // Assert: the CSI volume is not mounted yet, then every volume is.
    await expect(page.getByRole('heading', { level: 1, name: `${E2E_NAMESPACE}/web-0` })).toBeVisible();
    const data = page.getByRole('article', { name: 'data' });
    await expect(data.locator('.pipeline-card__header [data-state]')).not.toHaveAttribute('data-state', 'ready');
    // Among visible elements: a streamed boundary can wait in a hidden copy beside the shown one.
    const kubeletSummary = page.getByTestId('kubelet-summary').filter({ visible: true });
    await expect(kubeletSummary).toContainText('unmounted volumes=[data');
    for (const volume of ['scratch', 'memory', 'config', 'tls', 'data']) {
      const card = page.getByRole('article', { name: volume });
      await expect(card.locator('.pipeline-card__header [data-state]'), volume).toHaveAttribute('data-state', 'ready');
      const mountedStage = card.getByRole('list', { name: `Mount pipeline of ${volume}` }).getByRole('listitem').filter({ has: page.locator('.stage__label', { hasText: /^mounted into pod$/ }) });
      await expect(mountedStage, volume).toContainText('done');
    }
    await expect(kubeletSummary).toHaveText('unmounted volumes=[], unattached volumes=[]');
    // The CSI volume went through attach and device mount, as the pipeline shows.
    for (const stage of ['attached', 'device mounted']) {
      const item = data.getByRole('listitem').filter({ has: page.locator('.stage__label', { hasText: new RegExp(`^${stage}$`) }) });
      await expect(item, stage).toContainText('done');
    }
    // The agent agrees (read through its API, not the dashboard).
    const mounts = podMounts(await waitForAgent('e2e-node-a', 'the agent reports the pod', (s) => s), web.uid);
    expect(Object.fromEntries(mounts)).toEqual({ scratch: 'mounted', memory: 'mounted', config: 'mounted', tls: 'mounted', data: 'mounted' });
    await saveScreenshot(page, 'pod');

    await data.getByRole('link', { name: 'data' }).click();
    await expect(page).toHaveURL(/\/volumes\/kubernetes\.io%2Fcsi%2Fcsi-loop\.volumescope\.dev%5E/);
    await expect(page.getByRole('heading', { level: 1 })).toContainText('kubernetes.io/csi/csi-loop.volumescope.dev^e2e-node-a-web-data');
    await expect(page.getByRole('region', { name: /^Pods/ })).toContainText(`${E2E_NAMESPACE}/web-0`);
    await saveScreenshot(page, 'volume');

    await page.goto(nodePath('e2e-node-a'));
    await expect(page.getByRole('table', { name: 'Pods and volumes' })).toContainText('web-0');
    await saveScreenshot(page, 'node');
  } finally {
    await clearDriverFault('NodePublishVolume');
    await deletePod(web);
  }
  await waitForAgent('e2e-node-a', 'the pod is torn down', (s) => podMounts(s, web.uid).size === 0);
});
