/**
 * `npm run test:cluster` (scripts/cluster/test.mjs): the tests against the real upstream
 * components (e2e/cluster/). One cluster per run, started by the global setup and shared by the
 * files, which therefore run one after another in one worker. Timeouts are long: a kubectl call
 * takes about a second, an agent start several.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['e2e/cluster/**/*.test.ts'],
    environment: 'node',
    globalSetup: ['e2e/cluster/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 180_000,
    hookTimeout: 300_000,
    teardownTimeout: 120_000,
    taskTitleValueFormatTruncate: 0,
  },
});
