import type { Knex } from 'knex';
import type { Services } from '../services';
import { seedOrganizationAccounts } from './accounts-seed';
import { seedApiKeys, type SeedReport } from './api-keys-seed';
import { seedCryptoWithdrawalAddresses } from './crypto-seed';
import { seedEscrows } from './escrows-seed';
import { seedIdentity } from './identity-seed';
import { seedInvoices } from './invoices-seed';
import { seedNetworkStatus } from './network-status-seed';
import { seedPaymentLinks } from './payment-links-seed';
import { seedTontines } from './tontines-seed';
import { seedWallets } from './wallets-seed';
import { seedWebhooks } from './webhooks-seed';

/**
 * Local demo data (never in production). Each module contributes one step, run in order in
 * one transaction, so the seed is all or nothing.
 */
export type SeedStep = (trx: Knex.Transaction, services: Services, report: SeedReport) => Promise<void>;
export type { SeedReport };

const STEPS: SeedStep[] = [
  seedIdentity, // first: users and organisations (src/seed/identity-seed.ts)
  seedOrganizationAccounts, // organisation accounts with ledger postings (src/seed/accounts-seed.ts)
  seedInvoices, // customers, invoices, quotes and credit notes of every status (src/seed/invoices-seed.ts)
  seedNetworkStatus, // the demo organisation's audited opening status (src/seed/network-status-seed.ts)
  seedPaymentLinks, // Checkouts and one-off links of the demo organisation (src/seed/payment-links-seed.ts)
  seedWallets, // 1,000,000 XOF and 1,000 EUR per demo user, posted from external clearing (src/seed/wallets-seed.ts)
  seedEscrows, // one escrow in every status between the demo users (src/seed/escrows-seed.ts)
  seedTontines, // after the wallets: a forming, an active and a completed tontine (src/seed/tontines-seed.ts)
  seedApiKeys, // one API key of the demo organisation, its secret in the report (src/seed/api-keys-seed.ts)
  seedWebhooks, // one disabled webhook endpoint per demo organisation, at a local address (src/seed/webhooks-seed.ts)
  seedCryptoWithdrawalAddresses, // an active USDT address on TRON in the demo owner's address book (src/seed/crypto-seed.ts)
];

/** The advisory lock instances starting together take before they look at the database (any fixed number). */
const SEED_LOCK_KEY = 7_305_110_001;

export async function seedDemoData(knex: Knex, services: Services, report: SeedReport = {}): Promise<void> {
  await knex.transaction(async (trx) => {
    for (const step of STEPS) await step(trx, services, report);
  });
}

/**
 * Seeds once: returns false when the database already has users. Instances that start
 * together on an empty database queue on a transaction-scoped advisory lock, so one seeds
 * and the others then find its users (the lock ends with the transaction, also on the
 * embedded server whose one session outlives connections).
 */
export async function seedDemoDataIfEmpty(knex: Knex, services: Services, report: SeedReport = {}): Promise<boolean> {
  return knex.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?::bigint)', [SEED_LOCK_KEY]);
    const row = await trx('users').first<{ id: string } | undefined>('id');
    if (row) return false;
    for (const step of STEPS) await step(trx, services, report);
    return true;
  });
}
