/**
 * Playwright configuration of the dashboard's end-to-end tests (`npm run test:e2e`, which wraps
 * this in a private mount namespace as root; see scripts/run-e2e.mjs).
 *
 * - One worker: the tests share one stack (CSI test driver, two agents, dashboard) that
 *   e2e/global-setup.ts starts on free ports in a temporary directory; the tests pass its URLs
 *   through environment variables (e2e/fixtures.ts).
 * - Browser: Debian's Chromium (`/usr/bin/chromium`, or the binary in VOLUMESCOPE_CHROMIUM), never
 *   a downloaded one (no browser download works offline). VOLUMESCOPE_CHROMIUM=playwright uses Playwright's own build
 *   instead, for a laptop where `npx playwright install chromium` was run.
 */
import { defineConfig, devices } from '@playwright/test';

const chromium = process.env['VOLUMESCOPE_CHROMIUM'] ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: './e2e',
  // e2e/cluster/ holds the vitest tests against a real cluster (npm run test:cluster).
  testIgnore: '**/e2e/cluster/**',
  outputDir: './test-results',
  globalSetup: './e2e/global-setup.ts',
  workers: 1,
  fullyParallel: false,
  forbidOnly: process.env['CI'] !== undefined,
  retries: 0,
  timeout: 90_000,
  expect: { timeout: 20_000 },
  reporter: [['list']],
  use: {
    trace: 'off',
    screenshot: 'only-on-failure',
    actionTimeout: 15_000,
    navigationTimeout: 30_000,
  },
  projects: [
    {
      name: 'chromium',
      use: {
        ...devices['Desktop Chrome'],
        viewport: { width: 1400, height: 1000 },
        launchOptions: {
          ...(chromium === 'playwright' ? {} : { executablePath: chromium }),
          args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
        },
      },
    },
  ],
});
