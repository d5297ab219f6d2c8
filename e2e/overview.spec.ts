/**
 * The overview lists every configured node with its live connection and the agent's numbers.
 */
import { E2E_NODES } from './stack-info.ts';
import { expect, saveScreenshot, snapshot, test } from './fixtures.ts';

test('the overview lists both nodes, live, with the numbers their agents report', async ({ page }) => {
  // Act
  await page.goto('/');

  // Assert
  await expect(page.getByRole('heading', { level: 1, name: 'Nodes' })).toBeVisible();
  const cards = page.getByRole('listitem').filter({ has: page.getByRole('heading', { level: 2 }) });
  await expect(cards).toHaveCount(E2E_NODES.length);
  for (const node of E2E_NODES) {
    const card = cards.filter({ has: page.getByRole('heading', { level: 2, name: node }) });
    await expect(card.getByRole('link', { name: node })).toHaveAttribute('href', `/nodes/${node}`);
    await expect(card.getByTestId('connection-status')).toHaveAttribute('data-phase', 'live');
    await expect(card).toContainText('states synced: yes');
    // The card's pod count is the agent's (read independently through the agent API).
    const pods = card.locator('.counts__item').filter({ has: page.locator('dt', { hasText: /^pods$/ }) }).locator('dd');
    await expect.poll(async () => Number(await pods.textContent()) === (await snapshot(node)).desired.pods.length).toBe(true);
  }
  await saveScreenshot(page, 'overview');
});
