import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isValidIban } from '../../src/iban';
import { AccountService } from '../../src/modules/accounts';
import { testConfig } from '../support/app';
import { testKnex } from '../support/database';
import { createOrgAccount, createOrganization } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';

describe('organisation accounts (service)', () => {
  const service = () => new AccountService(testKnex(), { cursorSecret: testConfig().paySecret });

  it('creates an account with its own org_account ledger account; several per currency', async () => {
    const org = await createOrganization();
    const first = await createOrgAccount(org, { currency: 'EUR' });
    const second = await createOrgAccount(org, { currency: 'EUR', status: 'inactive' });
    expect(first.ledgerAccountId).not.toBe(second.ledgerAccountId);
    const ledger = await testKnex()('ledger_accounts').whereIn('id', [first.ledgerAccountId, second.ledgerAccountId]);
    expect(ledger).toHaveLength(2);
    for (const row of ledger) {
      expect(row).toMatchObject({ owner_type: 'organization', owner_id: org.id, kind: 'org_account', currency: 'EUR', allow_negative: false });
    }
    expect(ledger.map((r) => r.external_ref).sort()).toEqual([first.id, second.id].sort());
    const found = await service().getAccountForOrganization(org.id, second.id);
    expect(found).toMatchObject({ id: second.id, status: 'inactive', currency: 'EUR', exponent: 2, balanceMinor: 0n });
    await expectLedgerInvariants(testKnex());
  });

  it('answers 404 AccountNotFound for an unknown, malformed or foreign account', async () => {
    const org = await createOrganization();
    const other = await createOrganization();
    const foreign = await createOrgAccount(other);
    for (const id of [foreign.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      await expect(service().getAccountForOrganization(org.id, id)).rejects.toMatchObject({ code: 'AccountNotFound', category: 'not_found' });
    }
  });

  it('validates and normalises the fields', async () => {
    const org = await createOrganization();
    const knex = testKnex();
    const created = await knex.transaction((trx) =>
      service().createAccount(trx, { organizationId: org.id, currency: 'EUR', label: ' Main ', accountNumber: '12 3456-7890', iban: 'fr76 3000 6000 0112 3456 7890 189' }),
    );
    expect(created).toMatchObject({ label: 'Main', accountNumber: '1234567890', iban: 'FR7630006000011234567890189', status: 'active', holderType: 'business' });
    await expect(knex.transaction((trx) => service().createAccount(trx, { organizationId: org.id, currency: 'ZZZ', label: 'x' }))).rejects.toMatchObject({ code: 'ValidationError' });
    await expect(
      knex.transaction((trx) => service().createAccount(trx, { organizationId: org.id, currency: 'EUR', label: 'x', iban: 'FR7630006000011234567890188' })),
    ).rejects.toMatchObject({ code: 'ValidationError' });
    // Right check digits, wrong length for the country (a German IBAN has 22 characters): refused too.
    await expect(
      knex.transaction((trx) => service().createAccount(trx, { organizationId: org.id, currency: 'EUR', label: 'x', iban: 'DE51370400440532013000123' })),
    ).rejects.toMatchObject({ code: 'ValidationError', details: [expect.objectContaining({ field: 'iban' })] });
    await expect(knex.transaction((trx) => service().createAccount(trx, { organizationId: org.id, currency: 'EUR', label: '' }))).rejects.toMatchObject({ code: 'ValidationError' });
    expect(isValidIban('GB82WEST12345698765432')).toBe(true);
    expect(isValidIban('GB82WEST12345698765431')).toBe(false);
  });

  it('reads inside the caller\'s transaction and can lock the account row', async () => {
    const org = await createOrganization();
    const account = await createOrgAccount(org, { currency: 'USD' });
    const knex = testKnex();
    const locked = await knex.transaction((trx) => service().getAccountForOrganization(org.id, account.id, trx, { forUpdate: true }));
    expect(locked).toMatchObject({ id: account.id, currency: 'USD', ledgerAccountId: account.ledgerAccountId });
    expect(await service().findAccountForOrganization(org.id, account.id)).toMatchObject({ id: account.id });
    expect(await service().findAccountForOrganization((await createOrganization()).id, account.id)).toBeUndefined();
  });

  it('refuses at the database an org account whose ledger account has another currency', async () => {
    const org = await createOrganization();
    const [ledger] = await testKnex()('ledger_accounts')
      .insert({ owner_type: 'organization', owner_id: org.id, currency: 'EUR', kind: 'org_account', external_ref: crypto.randomUUID() })
      .returning('id');
    await expect(
      testKnex()('organization_accounts').insert({ organization_id: org.id, currency: 'XOF', label: 'x', ledger_account_id: (ledger as { id: string }).id }),
    ).rejects.toMatchObject({ code: '23503', constraint: 'organization_accounts_ledger_account_fk' });
    // And one ledger account backs at most one organisation account.
    const eur = await createOrgAccount(org, { currency: 'EUR' });
    await expect(
      testKnex()('organization_accounts').insert({ organization_id: org.id, currency: 'EUR', label: 'x', ledger_account_id: eur.ledgerAccountId }),
    ).rejects.toMatchObject({ code: '23505', constraint: 'organization_accounts_ledger_account_unique' });
  });
});
