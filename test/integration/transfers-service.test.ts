import crypto from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet, setAccountStatus, walletOf } from '../../src/modules/ledger';
import { IdempotencyService } from '../../src/modules/idempotency';
import { makeIban } from '../../src/iban';
import { SandboxRail, TransferService, type CreateTransferInput } from '../../src/modules/transfers';
import { testKnex } from '../support/database';
import { createUser, uniquePhone } from '../support/factories';
import { balanceOf, expectLedgerInvariants, postingEntries } from '../support/ledger-invariants';
import { transferClaim } from '../support/idempotency';

const knex = testKnex();
// Outcomes are reported only when a test calls rail.settleAll().
const rail = new SandboxRail({ settlementDelayMs: 3_600_000 });
const transfers = new TransferService({ knex, idempotency: new IdempotencyService(knex, { ttlHours: 24 }), rail });

/** Every payout handed to the sandbox, and every outcome reported. */
async function settleAll(): Promise<void> {
  await transfers.whenDispatched();
  await rail.settleAll();
}

async function fundedUser(balances: Record<string, bigint> = { XOF: 1_000_000n, EUR: 100_000n }, phone?: string) {
  const user = await createUser({ phone: phone ?? null });
  await withTransaction(knex, async (trx) => {
    for (const [currency, amount] of Object.entries(balances)) await fundWallet(trx, user.id, currency, amount);
  });
  return user;
}

async function wallet(userId: string, currency: string): Promise<bigint> {
  const account = await withTransaction(knex, (trx) => walletOf(trx, userId, currency));
  return balanceOf(knex, account.id);
}

function send(userId: string, input: CreateTransferInput, key: string = crypto.randomUUID()) {
  return transfers.create({ userId: userId }, transferClaim(key, input), input);
}

async function refusal(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code: string; details?: unknown; category: string };
  }
  throw new Error('expected a refusal');
}

describe('P2P transfers', () => {
  it('moves money between two wallets at once, by e-mail or by phone', async () => {
    const alice = await fundedUser();
    const bob = await createUser({ phone: uniquePhone() });
    const byEmail = await send(alice.id, { amount: 2500, currency: 'XOF', recipientIdentifier: ` ${bob.email!.toUpperCase()} `, note: 'Lunch' });
    expect(byEmail).toMatchObject({
      status: 'completed',
      rail: 'p2p',
      amount: 2500,
      amount_minor: '2500',
      currency: 'XOF',
      recipient: { identifier: bob.email, type: 'user', user_id: bob.id },
      note: 'Lunch',
      failure_reason: null,
    });
    const byPhone = await send(alice.id, { amount: 12.34, currency: 'EUR', recipientIdentifier: bob.phone! });
    expect(byPhone).toMatchObject({ status: 'completed', rail: 'p2p', amount: 12.34, amount_minor: '1234', recipient: { type: 'user', user_id: bob.id } });
    expect(await wallet(alice.id, 'XOF')).toBe(997_500n);
    expect(await wallet(bob.id, 'XOF')).toBe(2_500n);
    expect(await wallet(alice.id, 'EUR')).toBe(98_766n);
    expect(await wallet(bob.id, 'EUR')).toBe(1_234n);
    expect(await transfers.get({ userId: alice.id }, byEmail.id)).toEqual(byEmail);
    await expectLedgerInvariants(knex);
  });

  it('refuses what it cannot do, without consuming the key', async () => {
    const alice = await fundedUser({ XOF: 1_000n });
    const bob = await createUser();
    const key = crypto.randomUUID();
    const cases: Array<[CreateTransferInput, string, string]> = [
      [{ amount: 1.5, currency: 'XOF', recipientIdentifier: bob.email! }, 'invalid', 'ValidationError'],
      [{ amount: 1, currency: 'ZZZ', recipientIdentifier: bob.email! }, 'invalid', 'ValidationError'],
      [{ amount: 1, currency: 'XOF', recipientIdentifier: 'nobody-here@test.example' }, 'not_found', 'RecipientNotFound'],
      [{ amount: 1, currency: 'XOF', recipientIdentifier: alice.email! }, 'unprocessable', 'SelfTransfer'],
      [{ amount: 1_001, currency: 'XOF', recipientIdentifier: bob.email! }, 'unprocessable', 'InsufficientFunds'],
      [{ amount: 1, currency: 'EUR', recipientIdentifier: bob.email! }, 'unprocessable', 'InsufficientFunds'],
      [{ amount: 1, currency: 'XOF', recipientIdentifier: 'not an identifier' }, 'invalid', 'ValidationError'],
      [{ amount: 1, currency: 'XOF', recipientIdentifier: bob.email!, rail: 'bank' }, 'invalid', 'ValidationError'],
      [{ amount: 1, currency: 'XOF', recipientIdentifier: 'FR7630006000011234567890180' }, 'invalid', 'ValidationError'],
      [{ amount: 1, currency: 'XOF', recipientIdentifier: '+22501', rail: 'mobile_money' }, 'invalid', 'ValidationError'],
    ];
    for (const [input, category, code] of cases) {
      const error = await refusal(send(alice.id, input, key));
      expect({ input, category: error.category, code: error.code }).toEqual({ input, category, code });
    }
    const funds = await refusal(send(alice.id, { amount: 1_001, currency: 'XOF', recipientIdentifier: bob.email! }, key));
    expect(funds.details).toEqual({ currency: 'XOF', available: '1000', required: '1001' });
    // Every refusal left the key free.
    const done = await send(alice.id, { amount: 1_000, currency: 'XOF', recipientIdentifier: bob.email! }, key);
    expect(done.status).toBe('completed');
    expect(await wallet(alice.id, 'XOF')).toBe(0n);
  });

  it('refuses frozen wallets and locked senders (422)', async () => {
    const alice = await fundedUser({ EUR: 10_000n });
    const bob = await fundedUser({ EUR: 10_000n });
    const bobWallet = await withTransaction(knex, (trx) => walletOf(trx, bob.id, 'EUR'));
    await setAccountStatus(knex, bobWallet.id, 'frozen');
    const toFrozen = await refusal(send(alice.id, { amount: 1, currency: 'EUR', recipientIdentifier: bob.email! }));
    expect(toFrozen).toMatchObject({ code: 'WalletFrozen', category: 'unprocessable', details: { party: 'recipient' } });
    const fromFrozen = await refusal(send(bob.id, { amount: 1, currency: 'EUR', recipientIdentifier: alice.email! }));
    expect(fromFrozen).toMatchObject({ code: 'WalletFrozen', details: { party: 'sender' } });
    await setAccountStatus(knex, bobWallet.id, 'active');
    await knex('users').where({ id: alice.id }).update({ status: 'locked' });
    expect(await refusal(send(alice.id, { amount: 1, currency: 'EUR', recipientIdentifier: bob.email! }))).toMatchObject({ code: 'SenderLocked' });
    // A locked user still receives.
    expect((await send(bob.id, { amount: 1, currency: 'EUR', recipientIdentifier: alice.email! })).status).toBe('completed');
    expect(await wallet(alice.id, 'EUR')).toBe(10_100n);
  });
});

describe('rail transfers (sandbox)', () => {
  it('bank: pending with the money in transit, then completed out to external clearing', async () => {
    const alice = await fundedUser({ EUR: 100_000n });
    const iban = makeIban('FR', '30006000011234567890189');
    const transfer = await send(alice.id, { amount: 150.25, currency: 'EUR', recipientIdentifier: iban.replace(/(.{4})/g, '$1 ').toLowerCase() });
    expect(transfer).toMatchObject({ status: 'pending', rail: 'bank', amount_minor: '15025', recipient: { identifier: iban, type: 'iban' } });
    expect(transfer.recipient).not.toHaveProperty('user_id');
    expect(await wallet(alice.id, 'EUR')).toBe(84_975n);
    // Out of the sender's wallet into the bank rail's transit account, to the cent.
    expect(await postingEntries(knex, 'transfer.bank', transfer.id)).toEqual([
      { account: 'rail_transit', owner: null, currency: 'EUR', amount: 15_025n },
      { account: 'wallet', owner: alice.id, currency: 'EUR', amount: -15_025n },
    ]);
    expect(await postingEntries(knex, 'transfer.settlement', transfer.id)).toEqual([]);
    await settleAll();
    const settled = await transfers.get({ userId: alice.id }, transfer.id);
    expect(settled).toMatchObject({ status: 'completed', failure_code: null });
    // Settled: out of transit to the outside world, the same amount.
    expect(await postingEntries(knex, 'transfer.settlement', transfer.id)).toEqual([
      { account: 'external_clearing', owner: null, currency: 'EUR', amount: 15_025n },
      { account: 'rail_transit', owner: null, currency: 'EUR', amount: -15_025n },
    ]);
    expect(await wallet(alice.id, 'EUR')).toBe(84_975n);
    await expectLedgerInvariants(knex);
  });

  it('mobile money to a number that is no user; a magic number fails and the reversal returns the money', async () => {
    const alice = await fundedUser({ XOF: 50_000n });
    const ok = await send(alice.id, { amount: 10_000, currency: 'XOF', recipientIdentifier: '+225 07 00 00 99 99' });
    const ko = await send(alice.id, { amount: 5_000, currency: 'XOF', recipientIdentifier: '+2250700000002' });
    const rejected = await send(alice.id, { amount: 1_000, currency: 'XOF', recipientIdentifier: '+2250700000003', rail: 'mobile_money' });
    for (const t of [ok, ko, rejected]) expect(t).toMatchObject({ status: 'pending', rail: 'mobile_money', recipient: { type: 'msisdn' } });
    expect(ok.recipient.identifier).toBe('+2250700009999');
    expect(await wallet(alice.id, 'XOF')).toBe(34_000n);
    await settleAll();
    expect(await transfers.get({ userId: alice.id }, ok.id)).toMatchObject({ status: 'completed' });
    expect(await transfers.get({ userId: alice.id }, ko.id)).toMatchObject({ status: 'failed', failure_code: 'recipient_not_registered', failure_reason: expect.any(String) });
    expect(await transfers.get({ userId: alice.id }, rejected.id)).toMatchObject({ status: 'failed', failure_code: 'rejected_by_provider' });
    expect(await wallet(alice.id, 'XOF')).toBe(40_000n);
    const reversal = await knex('postings').where({ kind: 'transfer.reversal', reference: ko.id }).first();
    expect(reversal.reverses_posting_id).toBe((await knex('transfers').where({ id: ko.id }).first()).posting_id);
    await expectLedgerInvariants(knex);
  });

  it('bank failure by magic IBAN returns the money, even to a wallet frozen meanwhile; outcomes apply once', async () => {
    const alice = await fundedUser({ EUR: 1_000n });
    const transfer = await send(alice.id, { amount: 4, currency: 'EUR', recipientIdentifier: makeIban('DE', '370400440532010002'), rail: 'bank' });
    const aliceWallet = await withTransaction(knex, (trx) => walletOf(trx, alice.id, 'EUR'));
    await setAccountStatus(knex, aliceWallet.id, 'frozen');
    await settleAll();
    expect(await transfers.get({ userId: alice.id }, transfer.id)).toMatchObject({ status: 'failed', failure_code: 'account_closed' });
    expect(await wallet(alice.id, 'EUR')).toBe(1_000n);
    // A late or duplicated report changes nothing.
    await transfers.settle(transfer.id, { status: 'completed', railReference: 'late' });
    await transfers.settle(transfer.id, { status: 'failed', railReference: 'late', code: 'x', reason: 'x' });
    expect(await transfers.get({ userId: alice.id }, transfer.id)).toMatchObject({ status: 'failed', failure_code: 'account_closed' });
    expect(await wallet(alice.id, 'EUR')).toBe(1_000n);
    await setAccountStatus(knex, aliceWallet.id, 'active');
    await expectLedgerInvariants(knex);
  });

  it('mobile money to a platform user only when asked', async () => {
    const alice = await fundedUser({ XOF: 5_000n });
    const bob = await createUser({ phone: uniquePhone() });
    const p2p = await send(alice.id, { amount: 100, currency: 'XOF', recipientIdentifier: bob.phone! });
    const momo = await send(alice.id, { amount: 100, currency: 'XOF', recipientIdentifier: bob.phone!, rail: 'mobile_money' });
    expect(p2p.rail).toBe('p2p');
    expect(momo).toMatchObject({ rail: 'mobile_money', status: 'pending', recipient: { identifier: bob.phone, type: 'msisdn' } });
    const unknownP2p = await refusal(send(alice.id, { amount: 100, currency: 'XOF', recipientIdentifier: '+2250700001234', rail: 'p2p' }));
    expect(unknownP2p.code).toBe('RecipientNotFound');
    await settleAll();
  });

  it('hands pending transfers to the rail again after a restart, once the hand-over lease of the instance that died has ended', async () => {
    const alice = await fundedUser({ GHS: 1_000n });
    const transfer = await send(alice.id, { amount: 1, currency: 'GHS', recipientIdentifier: '+233241234567' });
    await transfers.whenDispatched();
    rail.stop(); // the process died: the sandbox forgot its schedule
    const submit = vi.spyOn(rail, 'submit');
    // Within the lease nobody hands it over again (another instance may still be waiting for its outcome).
    await transfers.resumePending();
    expect(submit.mock.calls.filter(([request]) => request.transferId === transfer.id)).toHaveLength(0);
    // The lease ends (a minute later): the next sweep hands it over, once.
    await knex('transfers').where({ id: transfer.id }).update({ rail_lease_until: knex.raw("now() - interval '1 second'") });
    expect(await transfers.resumePending()).toBeGreaterThanOrEqual(1);
    expect(submit.mock.calls.filter(([request]) => request.transferId === transfer.id)).toHaveLength(1);
    submit.mockRestore();
    await rail.settleAll();
    expect(await transfers.get({ userId: alice.id }, transfer.id)).toMatchObject({ status: 'completed' });
    const row = await knex('transfers').where({ id: transfer.id }).first();
    expect(row.rail_reference).toBe(`sandbox_mobile_money_${transfer.id}`);
  });

  it('a graceful shutdown gives its hand-overs back, so the next start hands them over at once', async () => {
    const alice = await fundedUser({ GHS: 1_000n });
    const transfer = await send(alice.id, { amount: 1, currency: 'GHS', recipientIdentifier: '+233241234568' });
    await transfers.whenDispatched();
    rail.stop();
    await transfers.releaseHandOvers();
    const submit = vi.spyOn(rail, 'submit');
    expect(await transfers.resumePending()).toBeGreaterThanOrEqual(1);
    expect(submit.mock.calls.filter(([request]) => request.transferId === transfer.id)).toHaveLength(1);
    submit.mockRestore();
    await rail.settleAll();
    expect(await transfers.get({ userId: alice.id }, transfer.id)).toMatchObject({ status: 'completed' });
  });
});

describe('listing', () => {
  it('pages the caller’s transfers newest first and hides everybody else’s', async () => {
    const alice = await fundedUser({ XOF: 1_000n });
    const bob = await createUser();
    const sent = [];
    for (let i = 1; i <= 5; i += 1) sent.push(await send(alice.id, { amount: i, currency: 'XOF', recipientIdentifier: bob.email! }));
    const first = await transfers.list({ userId: alice.id }, { limit: 2 });
    expect(first.data.map((t) => t.amount)).toEqual([5, 4]);
    expect(first).toMatchObject({ object: 'list', has_more: true, next_cursor: first.data[1]?.id });
    const second = await transfers.list({ userId: alice.id }, { limit: 2, startingAfter: first.next_cursor! });
    expect(second.data.map((t) => t.amount)).toEqual([3, 2]);
    const last = await transfers.list({ userId: alice.id }, { limit: 2, startingAfter: second.next_cursor! });
    expect(last.data.map((t) => t.amount)).toEqual([1]);
    expect(last).toMatchObject({ has_more: false, next_cursor: null });
    expect((await transfers.list({ userId: bob.id }, { limit: 50 })).data).toEqual([]);
    expect((await refusal(transfers.get({ userId: bob.id }, sent[0]!.id))).code).toBe('NotFound');
    expect((await refusal(transfers.list({ userId: bob.id }, { limit: 2, startingAfter: sent[0]!.id }))).code).toBe('ValidationError');
  });
});

describe('invariants under random transfer sequences (property)', () => {
  it('never creates, loses or double-moves money', async () => {
    const users = await Promise.all(Array.from({ length: 4 }, () => fundedUser({ XOF: 10_000n, EUR: 5_000n })));
    const transferArb = fc.record({
      from: fc.nat({ max: 3 }),
      to: fc.nat({ max: 4 }), // 4: a mobile-money payout (may fail by magic number)
      currency: fc.constantFrom('XOF', 'EUR'),
      minor: fc.bigInt({ min: 1n, max: 6_000n }),
      magic: fc.constantFrom('9999', '0002'),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(transferArb, { minLength: 1, maxLength: 8 }), async (steps) => {
        await settleAll(); // leftovers of a failed run (while shrinking) settle before we read balances
        const expected = new Map<string, bigint>();
        for (const u of users) for (const c of ['XOF', 'EUR']) expected.set(`${u.id}:${c}`, await wallet(u.id, c));
        const refunds: Array<[string, bigint]> = [];
        for (const step of steps) {
          const from = users[step.from]!;
          const exponent = step.currency === 'EUR' ? 2 : 0;
          const amount = Number(step.minor) / 10 ** exponent; // a client's JSON number, e.g. 12.34
          const toUser = step.to < 4 ? users[step.to]! : undefined;
          const recipientIdentifier = toUser ? toUser.email! : `+22507000${step.magic.padStart(5, '0')}`;
          const fromKey = `${from.id}:${step.currency}`;
          try {
            const t = await send(from.id, { amount, currency: step.currency, recipientIdentifier });
            expect(t.amount_minor).toBe(step.minor.toString());
            expected.set(fromKey, expected.get(fromKey)! - step.minor);
            if (toUser) expected.set(`${toUser.id}:${step.currency}`, expected.get(`${toUser.id}:${step.currency}`)! + step.minor);
            else if (step.magic === '0002') refunds.push([fromKey, step.minor]); // returned by the reversal, once settled
          } catch (error) {
            const code = (error as { code?: string }).code;
            if (toUser === from) expect(code).toBe('SelfTransfer');
            else {
              expect(code).toBe('InsufficientFunds');
              expect(expected.get(fromKey)!).toBeLessThan(step.minor);
            }
          }
        }
        await settleAll();
        for (const [key, minor] of refunds) expected.set(key, expected.get(key)! + minor);
        for (const [key, value] of expected) {
          const [userId, currency] = key.split(':') as [string, string];
          expect(await wallet(userId, currency)).toBe(value);
          expect(value).toBeGreaterThanOrEqual(0n);
        }
        await expectLedgerInvariants(knex);
      }),
      { numRuns: 15 },
    );
  });
});
