import { defineConfig } from 'vitest/config';

// With DATABASE_URL each file runs in a worker of its own on a database of its own (cloned
// from the run's migrated template: test/support/database.ts). Without it each of the two
// workers has an embedded PGlite of its own (test/support/global-setup.ts; it serves a single
// connection): the files of a worker run one after another and share its pool (isolate: false).
const embedded = !process.env.DATABASE_URL;
// The mutation run hands one migrated embedded server to every run (TEST_DATABASE_URL): one worker.
const oneEmbeddedServer = embedded && process.env.TEST_DATABASE_KIND === 'embedded';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup-env.ts', 'test/support/file-database.ts', 'test/support/stop-jobs.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: !oneEmbeddedServer,
    isolate: !embedded,
    maxWorkers: oneEmbeddedServer ? 1 : 2,
  },
});
