/**
 * The overview lists every configured node with its live connection and the agent's numbers.
 */
import { E2E_NODES, E2E_OBSERVER } from './stack-info.ts';
import { expect, saveScreenshot, snapshot, test } from './fixtures.ts';

test('the overview lists every node (both managed ones and the observer), live, with the numbers their agents report', async ({ page }) => {
  // Act
  await page.goto('/');

  // Assert
  await expect(page.getByRole('heading', { level: 1, name: 'Nodes' })).toBeVisible();
  const cards = page.getByRole('listitem').filter({ has: page.getByRole('heading', { level: 2 }) });
  await expect(cards).toHaveCount(E2E_NODES.length + 1);
  const observerCard = cards.filter({ has: page.getByRole('heading', { level: 2, name: E2E_OBSERVER }) });
  await expect(observerCard.getByRole('link', { name: E2E_OBSERVER })).toHaveAttribute('href', `/nodes/${E2E_OBSERVER}`);
  await expect(observerCard.getByTestId('connection-status')).toHaveAttribute('data-phase', 'live');
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
