import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { createCaller, walletBalance, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';

let app: App;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp({ limitPolicy: SHIPPED_LIMIT_POLICY });
});

async function callerAt(tier: 'tier_0' | 'tier_2', balances: Record<string, bigint> = {}): Promise<TestCaller> {
  const caller = await createCaller(app, balances);
  await knex('users').where({ id: caller.user.id }).update({ tier });
  return caller;
}

function send(from: TestCaller, to: TestCaller, amount: number) {
  return request(app).post('/api/transfers').set(from.auth).set('Idempotency-Key', crypto.randomUUID()).send({ amount, currency: 'XOF', recipientIdentifier: to.user.email });
}

const tier0 = SHIPPED_LIMIT_POLICY.currencies.get('XOF')?.get('tier_0');

describe('20 transfers at once near a cap', () => {
  it("a sender's daily outflow: exactly the transfers that fit pass, the cap holds to the unit and the ledger balances", async () => {
    const daily = Number(tier0?.daily_outflow);
    const sender = await callerAt('tier_0', { XOF: 1_000_000n });
    const recipients = await Promise.all(Array.from({ length: 20 }, () => callerAt('tier_2')));
    // 15,000 each: 13 fit under 200,000 (195,000), the 14th would not.
    const amount = 15_000;
    const answers = await Promise.all(recipients.map((to) => send(sender, to, amount)));
    const fits = Math.floor(daily / amount);
    expect(answers.filter((res) => res.status === 200)).toHaveLength(fits);
    const refused = answers.filter((res) => res.status !== 200);
    expect(refused.map((res) => [res.status, res.body.error, res.body.details.limit])).toEqual(Array(20 - fits).fill([409, 'LimitExceeded', 'daily_outflow']));
    expect(await walletBalance(sender.user.id, 'XOF')).toBe(1_000_000n - BigInt(fits * amount));
    const row = await knex('ledger_accounts').where({ owner_type: 'user', owner_id: sender.user.id, currency: 'XOF', kind: 'wallet' }).first('outflow_day_minor');
    expect(row.outflow_day_minor).toBe(String(fits * amount));
    await expectLedgerInvariants(knex);
  });

  it("a recipient's balance cap: 20 senders at once, exactly those that fit are credited, the others answer RecipientCannotReceive", async () => {
    const balanceCap = Number(tier0?.balance);
    const recipient = await callerAt('tier_0');
    const senders = await Promise.all(Array.from({ length: 20 }, () => callerAt('tier_2', { XOF: 100_000n })));
    const amount = 15_000;
    const answers = await Promise.all(senders.map((from) => send(from, recipient, amount)));
    const fits = Math.floor(balanceCap / amount);
    expect(answers.filter((res) => res.status === 200)).toHaveLength(fits);
    expect(answers.filter((res) => res.status !== 200).map((res) => [res.status, res.body.error])).toEqual(Array(20 - fits).fill([409, 'RecipientCannotReceive']));
    expect(await walletBalance(recipient.user.id, 'XOF')).toBe(BigInt(fits * amount));
    await expectLedgerInvariants(knex);
  });
});
