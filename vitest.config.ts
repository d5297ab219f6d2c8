import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['lib/**/*.test.ts', 'agent/**/*.test.ts', 'drivers/**/*.test.ts', 'components/**/*.test.ts', 'deploy/**/*.test.ts', 'scripts/**/*.test.ts'],
    // Cluster tests (real upstream binaries) run with vitest.cluster.config.ts, Playwright specs
    // with playwright.config.ts: never in the unit run, even when named on the command line.
    exclude: [...configDefaults.exclude, 'e2e/**'],
    environment: 'node',
    testTimeout: 20_000,
    pool: 'forks',
    // Table-driven names (`it.each` with `$title`) are printed whole, not cut at 40 characters.
    taskTitleValueFormatTruncate: 0,
  },
});
