// Mutation testing of the money and access core (`make mutation`; not part of `make test`).
// After a file moves, re-point its line in `mutate` (and its entries in `equivalentMutants`).

/** The critical core: a surviving mutant here is money or access that no test guards. */
const CRITICAL_CORE = [
  'src/modules/ledger/money.ts', // amount parsing and formatting
  'src/modules/ledger/ledger-service.ts', // the posting path
  'src/modules/idempotency/idempotency-service.ts',
  'src/modules/organizations/access-policy.ts', // the access rules
  'src/modules/organizations/organization-access-service.ts', // their enforcement
  'src/modules/network-status/network-status-service.ts',
  'src/modules/transfers/recipient.ts',
  'src/modules/payment-links/link-security.ts', // link and receipt security
  'src/modules/invoices/invoice-lifecycle.ts',
];

/**
 * The tests that exercise the core (per-test coverage then runs, for each mutant, only the
 * tests that reach it). Suites of other concerns (rate limits, seeds, statements, browser)
 * are left out to keep the run short.
 */
const CORE_TESTS = [
  'test/unit/money.test.ts',
  'test/unit/recipient.test.ts',
  'test/unit/link-security.test.ts',
  'test/unit/organization-access.test.ts',
  'test/unit/invoice-domain.test.ts',
  'test/integration/ledger.test.ts',
  'test/integration/idempotency.test.ts',
  'test/integration/transfers-service.test.ts',
  'test/api/access-policy.test.ts',
  'test/api/network-status.test.ts',
  'test/api/transfers.test.ts',
  'test/api/idempotency.test.ts',
  'test/api/invoices.test.ts',
  'test/api/payment-links.test.ts',
  'test/api/pay-page.test.ts',
];

/**
 * Mutants that cannot change behaviour, each with the reason. Matched by file name and the
 * exact source text of the smallest syntax node whose every mutant is equivalent; they are
 * reported as "ignored" with this reason and left out of the score (see
 * scripts/mutation/equivalent-mutants.mjs).
 */
const EQUIVALENT_MUTANTS = [];

export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.mts' },
  checkers: ['typescript'],
  // The checker compiles the application only (src and generated): faster per mutant.
  tsconfigFile: 'tsconfig.mutation.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  // The machine is shared: one test runner, one checker.
  concurrency: 1,
  timeoutMS: 20_000,
  mutate: CRITICAL_CORE,
  testFiles: CORE_TESTS,
  plugins: ['@stryker-mutator/vitest-runner', '@stryker-mutator/typescript-checker', './scripts/mutation/equivalent-mutants.mjs'],
  ignorers: ['equivalent-mutants'],
  equivalentMutants: EQUIVALENT_MUTANTS,
  reporters: ['html', 'json', 'clear-text', 'progress'],
  htmlReporter: { fileName: 'test-artifacts/mutation/index.html' },
  jsonReporter: { fileName: 'test-artifacts/mutation/mutation.json' },
  incrementalFile: 'test-artifacts/mutation/incremental.json',
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  warnings: { unknownOptions: false },
};
