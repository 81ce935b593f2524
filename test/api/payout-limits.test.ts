import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrgAccount, createOrganization } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';
import { moveMoney } from '../support/org-account-postings';

/** Payouts of organisations against the shipped caps of a verified organisation (the reserve is the movement checked). */

let app: App;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp({ limitPolicy: SHIPPED_LIMIT_POLICY });
});

const VERIFIED = SHIPPED_LIMIT_POLICY.currencies.get('XOF')?.get('verified');
const PER_TRANSACTION = BigInt(VERIFIED?.per_transaction ?? 0n);

describe('a payout over the shipped per-transaction cap of a verified organisation', () => {
  it('is refused 409 LimitExceeded with the cap and the tier, and nothing moves; one at the cap is accepted', async () => {
    expect(PER_TRANSACTION).toBe(100_000_000n);
    const org = await createOrganization();
    await knex('organizations').where({ id: org.id }).update({ verification_status: 'verified', verification_decided_at: new Date() });
    const account = await createOrgAccount(org, { currency: 'XOF' });
    // Received in two payments, each at the cap.
    await moveMoney(account, PER_TRANSACTION);
    await moveMoney(account, PER_TRANSACTION);
    const finance = await accessTokenFor(app, await createMember(org, 'finance_manager'));
    const payout = (amount: bigint) =>
      request(app)
        .post(`${businessPath(org.id)}/payouts`)
        .set(bearer(finance))
        .set('Idempotency-Key', crypto.randomUUID())
        .send({ account_id: account.id, amount: Number(amount), destination: { type: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' } });

    const over = await payout(PER_TRANSACTION + 1n);
    expect(over.status, JSON.stringify(over.body)).toBe(409);
    expect(over.body).toEqual({
      success: false,
      error: 'LimitExceeded',
      message: expect.any(String),
      details: { limit: 'per_transaction', currency: 'XOF', limit_minor: '100000000', remaining_minor: '100000000', tier: 'verified', next_tier: null },
    });
    expect(await balanceOf(knex, account.ledgerAccountId)).toBe(2n * PER_TRANSACTION);
    expect(await knex('payouts').where({ organization_id: org.id }).count<{ count: string }[]>('* as count')).toEqual([{ count: '0' }]);

    const at = await payout(PER_TRANSACTION);
    expect(at.status, JSON.stringify(at.body)).toBe(201);
    expect(at.body.data).toMatchObject({ status: 'pending_approval', amount_minor: '100000000' });
    expect(await balanceOf(knex, account.ledgerAccountId)).toBe(PER_TRANSACTION);
    await expectLedgerInvariants(knex);
  });
});
