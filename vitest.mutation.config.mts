import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.mts';

/**
 * The tests of the critical core (per-test coverage then runs, for each mutant, only those
 * that reach it). Suites of other concerns (rate limits, seeds, statements, browser) are left
 * out to keep the run short. MUTATION_TESTS (comma-separated paths) narrows it further.
 */
const CORE_TESTS = [
  'test/unit/money.test.ts',
  'test/unit/recipient.test.ts',
  'test/unit/link-security.test.ts',
  'test/unit/webhook-url-guard.test.ts',
  'test/unit/webhook-signature.test.ts',
  'test/unit/organization-access.test.ts',
  'test/unit/access-policy.test.ts',
  'test/unit/lifecycle.test.ts',
  'test/unit/invoice-domain.test.ts',
  'test/unit/escrow-domain.test.ts',
  'test/unit/escrow-posting-plan.test.ts',
  'test/unit/pending-key.test.ts',
  'test/unit/tontine-lifecycle.test.ts',
  'test/unit/tontine-draw.test.ts',
  'test/unit/tontine-posting-plan.test.ts',
  'test/unit/tontine-contribution-decision.test.ts',
  'test/unit/held-payout.test.ts',
  'test/unit/payout-holds.test.ts',
  'test/unit/limit-policy.test.ts',
  'test/unit/top-up-core.test.ts',
  'test/unit/refund-plan.test.ts',
  'test/unit/payout-plan.test.ts',
  'test/unit/transfer-decision.test.ts',
  'test/unit/crypto-rules.test.ts',
  'test/unit/crypto-addresses.test.ts',
  'test/unit/crypto-withdrawal-address-check.test.ts',
  'test/unit/crypto-withdrawal-plan.test.ts',
  'test/unit/health-fast-path.test.ts',
  'test/unit/business-verification-config.test.ts',
  'test/integration/ledger.test.ts',
  'test/integration/ledger-guards.test.ts',
  'test/integration/money-paths-property.test.ts',
  'test/integration/idempotency.test.ts',
  'test/integration/idempotency-exact.test.ts',
  'test/integration/idempotency-retry-after.test.ts',
  'test/integration/query-counts.test.ts',
  'test/integration/write-path.test.ts',
  'test/integration/money-scenario.test.ts',
  'test/integration/network-status-service.test.ts',
  'test/integration/organization-access-service.test.ts',
  'test/integration/transfers-service.test.ts',
  'test/integration/transfer-window.test.ts',
  'test/integration/decision-window.test.ts',
  'test/integration/escrow-window.test.ts',
  'test/integration/tontine-window.test.ts',
  'test/api/access-policy.test.ts',
  'test/api/network-status.test.ts',
  'test/api/idempotency.test.ts',
  'test/api/escrows.test.ts',
  'test/api/transfers.test.ts',
  'test/api/limits.test.ts',
  'test/api/top-ups.test.ts',
  'test/api/refunds.test.ts',
  'test/api/payouts.test.ts',
  'test/api/crypto-deposits.test.ts',
  'test/api/crypto-conversions.test.ts',
  'test/api/crypto-withdrawals.test.ts',
  'test/api/invoices.test.ts',
  'test/api/payment-links.test.ts',
  'test/api/pay-page.test.ts',
];

// Every test file runs in a fresh module graph, so mutants in code that runs at import
// (constants, patterns, the access table) are really loaded. On the embedded back-end that
// means a new pool per file on the one server (test/support/database.ts).
const config = mergeConfig(base, defineConfig({ test: { isolate: true } }));
// Set, not merged: mergeConfig would append these to the base config's include.
config.test = { ...config.test, include: process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(',') : CORE_TESTS };
export default config;
