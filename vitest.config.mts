import { defineConfig } from 'vitest/config';

// With DATABASE_URL each file runs in a worker of its own on a database of its own (cloned
// from the run's migrated template: test/support/database.ts). Without it the suite runs on
// one embedded PGlite, which serves a single connection: then every file runs in one worker
// that shares one pool (isolate: false).
const embedded = !process.env.DATABASE_URL;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup-env.ts', 'test/support/file-database.ts', 'test/support/stop-jobs.ts', 'test/support/limits-reset.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: !embedded,
    isolate: !embedded,
    maxWorkers: embedded ? 1 : 2,
  },
});
