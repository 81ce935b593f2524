import { defineConfig } from 'vitest/config';

// Without DATABASE_URL the suite runs on one embedded PGlite, which serves a single
// connection: then every file runs in one worker that shares one pool (isolate: false).
const embedded = !process.env.DATABASE_URL;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup-env.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: !embedded,
    isolate: !embedded,
    maxWorkers: embedded ? 1 : 2,
  },
});
