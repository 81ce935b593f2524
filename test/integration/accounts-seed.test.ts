import { describe, expect, it } from 'vitest';
import { DEMO_ACCOUNTS, seedOrganizationAccounts } from '../../src/seed/accounts-seed';
import { DEMO_ORGANIZATION_NAME, DEMO_OTHER_ORGANIZATION_NAME } from '../../src/seed/identity-seed';
import { buildTestApp } from '../support/app';
import { testKnex } from '../support/database';

class Rollback extends Error {}

describe('demo seed: organisation accounts', () => {
  it('gives Demo Trading SARL active XOF, EUR and USD accounts and an inactive one, funded through balanced postings', async () => {
    const app = await buildTestApp();
    const knex = testKnex();
    // Inside one transaction that is rolled back: the demo names never leak into other tests.
    await expect(
      knex.transaction(async (trx) => {
        const [demo] = (await trx('organizations').insert({ name: DEMO_ORGANIZATION_NAME }).returning('id')) as Array<{ id: string }>;
        await trx('organizations').insert({ name: DEMO_OTHER_ORGANIZATION_NAME });
        await seedOrganizationAccounts(trx, app.services);
        const rows = await trx('organization_accounts as oa')
          .join('ledger_accounts as la', 'la.id', 'oa.ledger_account_id')
          .where('oa.organization_id', (demo as { id: string }).id)
          .select('oa.label', 'oa.currency', 'oa.status', 'la.balance_minor', 'la.kind', 'la.owner_id');
        const byLabel = new Map(rows.map((r) => [r.label as string, r]));
        expect(byLabel.get(DEMO_ACCOUNTS.xof)).toMatchObject({ currency: 'XOF', status: 'active', balance_minor: '1425500', kind: 'org_account' });
        expect(byLabel.get(DEMO_ACCOUNTS.eur)).toMatchObject({ currency: 'EUR', status: 'active', balance_minor: '1282051' });
        expect(byLabel.get(DEMO_ACCOUNTS.usd)).toMatchObject({ currency: 'USD', status: 'active', balance_minor: '380000' });
        expect(byLabel.get(DEMO_ACCOUNTS.inactive)).toMatchObject({ status: 'inactive' });
        for (const row of rows) expect(row.owner_id).toBe((demo as { id: string }).id);
        // Every seeded posting balances (the deferred constraint triggers check it at commit;
        // here, before the rollback, check it explicitly).
        const unbalanced = await trx('entries').select('posting_id').sum({ total: 'amount_minor' }).groupBy('posting_id').havingRaw('sum(amount_minor) <> 0');
        expect(unbalanced).toEqual([]);
        const lines = await trx('entries').whereIn('account_id', trx('organization_accounts').where('organization_id', (demo as { id: string }).id).select('ledger_account_id')).count<Array<{ count: string }>>('* as count');
        expect(Number(lines[0]?.count)).toBe(10);
        throw new Rollback();
      }),
    ).rejects.toBeInstanceOf(Rollback);
  });
});
