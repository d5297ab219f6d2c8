import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['lib/**/*.test.ts', 'agent/**/*.test.ts', 'drivers/**/*.test.ts', 'components/**/*.test.ts', 'deploy/**/*.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    pool: 'forks',
    // Table-driven names (`it.each` with `$title`) are printed whole, not cut at 40 characters.
    taskTitleValueFormatTruncate: 0,
  },
});
