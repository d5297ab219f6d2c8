/**
 * An agent restart: the agent keeps its mounts on SIGTERM, and the new process reconstructs them
 * from disk; the node page reconnects by itself and shows the reconstruction report.
 */
import { basicVolumes, deletePod, expect, newPod, nodePath, podMounts, podPath, saveScreenshot, restartAgent, snapshot, test, waitForAgent, writeClaim, writePod } from './fixtures.ts';

test('after an agent restart the node page shows the reconstruction panel', async ({ page }) => {
  // Arrange: a pod with emptyDir, configMap, secret and CSI volumes, mounted.
  await writeClaim('e2e-node-b', 'restart-data');
  const db = newPod('e2e-node-b', 'db-0', { ...basicVolumes, data: { persistentVolumeClaim: { claimName: 'restart-data' } } });
  const volumes = ['config', 'data', 'scratch', 'tls'];
  // Reconstruction reports volume directories: a CSI volume's is named after its PV.
  const directories = ['config', 'pv-e2e-restart-data', 'scratch', 'tls'];
  await writePod(db);
  try {
    await waitForAgent('e2e-node-b', 'every volume is mounted', (s) => volumes.every((v) => podMounts(s, db.uid).get(v) === 'mounted'));
    const startedBefore = (await snapshot('e2e-node-b')).agent.startedAt;
    await page.goto(nodePath('e2e-node-b'));
    await expect(page.getByTestId('connection-status').first()).toHaveAttribute('data-phase', 'live');

    // Act
    await restartAgent('e2e-node-b');

    // Assert: a new agent process; the page follows it and shows what it reconstructed.
    const after = await snapshot('e2e-node-b');
    expect(after.agent.startedAt).toBeGreaterThan(startedBefore);
    const panel = page.getByRole('region', { name: 'Reconstruction' });
    await expect(panel).toContainText('reconstruction done');
    const table = panel.getByRole('table');
    for (const directory of directories) {
      const row = table.getByRole('row').filter({ hasText: 'e2e/db-0' }).filter({ has: page.getByRole('cell', { name: directory, exact: true }) });
      await expect(row, directory).toContainText('confirmed-mounted');
    }
    await expect(page.getByTestId('connection-status').first()).toHaveAttribute('data-phase', 'live');
    // The banner says so and links to the report, which comes first and opens with one sentence.
    const banner = page.getByTestId('restart-banner');
    await expect(banner).toContainText('The agent restarted at');
    await expect(banner).toContainText('its previous run was up');
    await expect(banner.getByRole('link', { name: 'See what reconstruction found' })).toHaveAttribute('href', '#reconstruction');
    await expect(panel.locator('.plain-line')).toContainText(/^After the restart at .+: \d+ volume directories found, .+ confirmed, \d+ uncertain, \d+ cleaned up, took /);
    await expect(page.locator('section.panel').first()).toHaveAttribute('id', 'reconstruction');
    await expect(page.locator('.stale-mark[data-stale="true"]')).toHaveCount(0);
    await panel.scrollIntoViewIfNeeded();
    await saveScreenshot(page, 'node-reconstruction');

    // The pod page shows the same report for its volumes, and everything is still mounted.
    await page.goto(podPath('e2e-node-b', db.uid));
    await expect(page.getByRole('region', { name: 'Reconstruction' }).getByRole('row')).toHaveCount(directories.length + 1);
    for (const volume of volumes) await expect(page.getByRole('article', { name: volume }).locator('.pipeline-card__header [data-state]')).toHaveAttribute('data-state', 'ready');
  } finally {
    await deletePod(db);
  }
  await waitForAgent('e2e-node-b', 'the pod is torn down', (s) => podMounts(s, db.uid).size === 0);
});
