import type { Knex } from 'knex';
import { insertDemoLinks } from '../modules/payment-links';
import { DEMO_ACCOUNTS } from './accounts-seed';
import { DEMO_ORGANIZATION_NAME, findDemoOrganizationId } from './identity-seed';

async function demoAccount(trx: Knex.Transaction, organizationId: string, label: string): Promise<{ id: string; currency: string }> {
  const row = await trx('organization_accounts').where({ organization_id: organizationId, label }).first<{ id: string; currency: string } | undefined>('id', 'currency');
  if (!row) throw new Error(`demo account "${label}" is missing: the accounts seed step must run first`);
  return { id: row.id, currency: row.currency.trim() };
}

/**
 * Seed step (after the organisation accounts): "Demo Trading SARL" gets the Checkout of its XOF
 * account and of its EUR account (signed amounts required), a one-off link with a fixed amount
 * and one with a customer-chosen amount. Everything goes through the caller's transaction.
 */
export async function seedPaymentLinks(trx: Knex.Transaction): Promise<void> {
  const organizationId = await findDemoOrganizationId(trx, DEMO_ORGANIZATION_NAME);
  const owner = await trx('memberships').where({ organization_id: organizationId, role: 'owner', status: 'active' }).first<{ user_id: string } | undefined>('user_id');
  const createdBy = owner?.user_id ?? null;
  const xof = await demoAccount(trx, organizationId, DEMO_ACCOUNTS.xof);
  const eur = await demoAccount(trx, organizationId, DEMO_ACCOUNTS.eur);
  await insertDemoLinks(trx, { organizationId, createdBy, xof, eur });
}
