import crypto from 'node:crypto';
import fc from 'fast-check';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet, walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createMember, createOrgAccount, createOrganization, createUser, type TestUser } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { transferClaim } from '../support/idempotency';

/**
 * Every money path at once: P2P transfers, mobile-money payouts (some fail, and their refund
 * is a reversal posting), and payments received through a payment link, fired concurrently,
 * each transfer sent one to three times at once under one Idempotency-Key. After every run:
 * each currency's entries sum to zero, no balance is negative, every balance equals the sum
 * of its entries (expectLedgerInvariants), the users' wallets hold exactly what they held
 * minus the payouts that completed, and every acknowledged key produced exactly one transfer.
 */

const knex = testKnex();
let app: App;
let users: TestUser[];
let checkoutId: string;
let orgLedgerAccountId: string;

const FAILING_MSISDN = '+2250700000002'; // the sandbox rail's "fails" number
const PAYING_MSISDN = '+2250700009999';

beforeAll(async () => {
  app = await buildTestApp();
  users = await Promise.all(Array.from({ length: 3 }, () => createUser()));
  await withTransaction(knex, async (trx) => {
    for (const user of users) await fundWallet(trx, user.id, 'XOF', 5_000n);
  });
  const org = await createOrganization();
  const owner = await accessTokenFor(app, await createMember(org, 'owner'));
  const account = await createOrgAccount(org, { currency: 'XOF' });
  orgLedgerAccountId = account.ledgerAccountId;
  const res = await request(app).post(`/api/business/organizations/${org.id}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  checkoutId = res.body.data.id as string;
});

async function walletTotal(): Promise<bigint> {
  let total = 0n;
  for (const user of users) total += await balanceOf(knex, (await withTransaction(knex, (trx) => walletOf(trx, user.id, 'XOF'))).id);
  return total;
}

const transferArb = fc.record({
  kind: fc.constant('transfer' as const),
  from: fc.nat({ max: 2 }),
  to: fc.constantFrom(0, 1, 2, 'fails', 'pays'),
  minor: fc.bigInt({ min: 1n, max: 4_000n }),
  sends: fc.integer({ min: 1, max: 3 }),
});
const paymentArb = fc.record({ kind: fc.constant('payment' as const), minor: fc.bigInt({ min: 1n, max: 3_000n }) });

describe('every money path under concurrency (property)', () => {
  it('conserves money per currency and gives every acknowledged key exactly one effect', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(transferArb, paymentArb), { minLength: 1, maxLength: 10 }), async (steps) => {
        await app.services.transfers.whenDispatched();
        await app.services.payoutRail.settleAll();
        const walletsBefore = await walletTotal();
        const orgBefore = await balanceOf(knex, orgLedgerAccountId);

        const acknowledged = new Map<string, Set<string>>(); // key -> transfer ids answered 200
        const payouts: Array<{ id: string; minor: bigint }> = [];
        let received = 0n;
        await Promise.all(
          steps.map(async (step) => {
            if (step.kind === 'payment') {
              const payment = await app.services.payments.start({
                linkId: checkoutId,
                nonce: crypto.randomUUID(),
                amountMinor: step.minor,
                reference: null,
                payer: { method: 'mobile_money', last4: '9999', decision: { outcome: 'succeeded', delayed: false } },
              });
              expect(payment.status).toBe('succeeded');
              received += step.minor;
              return;
            }
            const from = users[step.from] as TestUser;
            const to = typeof step.to === 'number' ? (users[step.to] as TestUser).email : step.to === 'fails' ? FAILING_MSISDN : PAYING_MSISDN;
            const rail = typeof step.to === 'number' ? undefined : ('mobile_money' as const);
            const key = crypto.randomUUID();
            const input = { amount: Number(step.minor), currency: 'XOF', recipientIdentifier: to as string, ...(rail ? { rail } : {}) };
            const outcomes = await Promise.allSettled(Array.from({ length: step.sends }, () => app.services.transfers.create({ userId: from.id }, transferClaim(key, input), input)));
            const ids = new Set<string>();
            for (const outcome of outcomes) {
              if (outcome.status === 'fulfilled') {
                ids.add(outcome.value.id);
                continue;
              }
              const code = (outcome.reason as { code?: string }).code;
              expect(['ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed', 'InsufficientFunds', 'SelfTransfer']).toContain(code);
              if (code === 'SelfTransfer') expect(step.to).toBe(step.from);
            }
            // One key, one effect: every 200 under it names the same transfer.
            expect(ids.size).toBeLessThanOrEqual(1);
            if (ids.size === 1) {
              acknowledged.set(key, ids);
              const [id] = [...ids] as [string];
              if (rail) payouts.push({ id, minor: step.minor });
            }
          }),
        );
        await app.services.transfers.whenDispatched();
        await app.services.payoutRail.settleAll();

        for (const [key, ids] of acknowledged) {
          const [id] = [...ids] as [string];
          const rows = await knex('idempotency_keys').where({ key, operation: 'createTransfer' }).select('resource_id', 'status');
          expect(rows).toEqual([{ resource_id: id, status: 'completed' }]);
          expect(await knex('transfers').where({ id }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
          expect(await knex('postings').where({ reference: id }).whereLike('kind', 'transfer.%').whereNotIn('kind', ['transfer.settlement', 'transfer.reversal'])).toHaveLength(1);
        }
        // Money left the users' wallets only through payouts that completed (a failed one came back).
        let paidOut = 0n;
        for (const payout of payouts) {
          const { status } = (await knex('transfers').where({ id: payout.id }).first('status')) as { status: string };
          expect(['completed', 'failed']).toContain(status);
          if (status === 'completed') paidOut += payout.minor;
        }
        expect(await walletTotal()).toBe(walletsBefore - paidOut);
        expect(await balanceOf(knex, orgLedgerAccountId)).toBe(orgBefore + received);
        await expectLedgerInvariants(knex);
      }),
      { numRuns: 8 },
    );
  });
});
