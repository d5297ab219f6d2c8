// Cluster tests (e2e/cluster): real upstream binaries (scripts/cluster/build.ts builds them when
// missing) and real processes. Not part of the unit run (vitest.config.ts leaves e2e/ out).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['e2e/cluster/**/*.test.ts'],
    environment: 'node',
    // An upstream build on a cold cache takes minutes; one csi-sanity run takes seconds.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    taskTitleValueFormatTruncate: 0,
  },
});
