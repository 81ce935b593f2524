import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import {
  ensureAccount,
  ensureAccounts,
  externalClearingAccount,
  fundWallet,
  platformAccount,
  post,
  reconcile,
  setAccountStatus,
  walletOf,
} from '../../src/modules/ledger';
import { ConflictError, UnprocessableError } from '../../src/errors';
import { testKnex } from '../support/database';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { fundedWallet as fundedWalletOn } from '../support/failures';

const knex = testKnex();
const fundedWallet = (currency: string, amountMinor: bigint) => fundedWalletOn(knex, currency, amountMinor);
const someone = () => crypto.randomUUID();


async function sqlError(promise: Promise<unknown>): Promise<{ code?: string; message: string; constraint?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; message: string; constraint?: string };
  }
  throw new Error('expected the statement to fail');
}

/** Calls the database's posting function directly, bypassing the ledger service. */
function ledgerPostSql(reference: string, entries: Array<[accountId: string, amountMinor: string]>) {
  return knex.raw('SELECT * FROM ledger_post(?, ?, ?::jsonb, NULL, ?::uuid[], ?::bigint[], false)', [
    'test.raw',
    reference,
    '{}',
    entries.map(([accountId]) => accountId),
    entries.map(([, amountMinor]) => amountMinor),
  ]);
}

describe('ledger accounts', () => {
  it('creates a wallet once per user and currency, even when asked concurrently', async () => {
    const userId = someone();
    const wallets = await Promise.all(Array.from({ length: 5 }, () => withTransaction(knex, (trx) => walletOf(trx, userId, 'XOF'))));
    expect(new Set(wallets.map((w) => w.id)).size).toBe(1);
    expect(wallets[0]).toMatchObject({ ownerType: 'user', ownerId: userId, currency: 'XOF', kind: 'wallet', balanceMinor: 0n, allowNegative: false });
    const eur = await withTransaction(knex, (trx) => walletOf(trx, userId, 'EUR'));
    expect(eur.id).not.toBe(wallets[0]?.id);
  });

  it('keeps several org accounts in one currency apart by external reference', async () => {
    const orgId = someone();
    const [a, b, again] = await withTransaction(knex, async (trx) => [
      await ensureAccount(trx, { ownerType: 'organization', ownerId: orgId, currency: 'USD', kind: 'org_account', externalRef: 'acct-1' }),
      await ensureAccount(trx, { ownerType: 'organization', ownerId: orgId, currency: 'USD', kind: 'org_account', externalRef: 'acct-2' }),
      await ensureAccount(trx, { ownerType: 'organization', ownerId: orgId, currency: 'USD', kind: 'org_account', externalRef: 'acct-1' }),
    ]);
    expect(a?.id).not.toBe(b?.id);
    expect(again?.id).toBe(a?.id);
  });

  it('has one external clearing account per currency, the only kind allowed to go negative', async () => {
    const [x, y] = await withTransaction(knex, async (trx) => [await externalClearingAccount(trx, 'GBP'), await externalClearingAccount(trx, 'GBP')]);
    expect(x?.id).toBe(y?.id);
    expect(x?.allowNegative).toBe(true);
    const error = await sqlError(
      knex('ledger_accounts').insert({ owner_type: 'user', owner_id: someone(), currency: 'EUR', kind: 'wallet', allow_negative: true }),
    );
    expect(error.constraint).toBe('ledger_accounts_only_clearing_negative');
  });

  it('ensureAccounts answers each identity in order, of every shape, in one query once they exist', async () => {
    const orgId = someone();
    const userId = someone();
    const identities = [
      { ownerType: 'organization' as const, ownerId: orgId, currency: 'USD', kind: 'org_account' as const, externalRef: 'acct-9' },
      { ownerType: 'platform' as const, ownerId: null, currency: 'XOF', kind: 'external_clearing' as const },
      { ownerType: 'user' as const, ownerId: userId, currency: 'XOF', kind: 'wallet' as const },
      { ownerType: 'platform' as const, ownerId: null, currency: 'XOF', kind: 'fees' as const, externalRef: `shard-${crypto.randomInt(256)}` },
      { ownerType: 'user' as const, ownerId: userId, currency: 'EUR', kind: 'wallet' as const },
    ];
    // The first time, the missing ones are created (the user's two wallets and the org account at least).
    const created = await withTransaction(knex, (trx) => ensureAccounts(trx, identities));
    const one = await withTransaction(knex, async (trx) => Promise.all(identities.map((identity) => ensureAccount(trx, identity))));
    expect(created.map((account) => account.id)).toEqual(one.map((account) => account.id));
    expect(created.map(({ ownerType, ownerId, currency, kind, externalRef }) => ({ ownerType, ownerId, currency, kind, externalRef: externalRef ?? undefined }))).toEqual(
      identities.map((identity) => ({ ...identity, externalRef: identity.externalRef ?? undefined })),
    );
    const statements: string[] = [];
    const listener = (query: { sql: string }) => statements.push(query.sql);
    knex.on('query', listener);
    try {
      const again = await withTransaction(knex, (trx) => ensureAccounts(trx, [...identities].reverse()));
      expect(again.map((account) => account.id)).toEqual(one.map((account) => account.id).reverse());
    } finally {
      knex.off('query', listener);
    }
    expect(statements.filter((sql) => !/^(BEGIN|COMMIT)/.test(sql))).toHaveLength(1);
  });

  it('refuses an unknown currency', async () => {
    await expect(withTransaction(knex, (trx) => walletOf(trx, someone(), 'ZZZ'))).rejects.toMatchObject({ code: 'ValidationError' });
  });
});

describe('postings', () => {
  it('moves money with balanced entries and records them', async () => {
    const { wallet: from } = await fundedWallet('EUR', 10_000n);
    const to = await withTransaction(knex, (trx) => walletOf(trx, someone(), 'EUR'));
    const posting = await withTransaction(knex, (trx) =>
      post(trx, {
        kind: 'test.move',
        reference: crypto.randomUUID(),
        metadata: { why: 'test' },
        entries: [
          { accountId: from.id, amountMinor: -2_550n },
          { accountId: to.id, amountMinor: 2_550n },
        ],
      }),
    );
    // Entries are recorded in account id order (the order their balances are locked and moved).
    expect(new Map(posting.entries.map((e) => [e.accountId, e.amountMinor]))).toEqual(new Map([[from.id, -2_550n], [to.id, 2_550n]]));
    expect(posting.entries.map((e) => e.accountId)).toEqual([from.id, to.id].sort());
    expect(posting.balancesAfter.get(from.id)).toBe(7_450n);
    expect(posting.balancesAfter.get(to.id)).toBe(2_550n);
    expect(await balanceOf(knex, from.id)).toBe(7_450n);
    expect(await balanceOf(knex, to.id)).toBe(2_550n);
    expect(await knex('postings').where({ id: posting.id }).first('metadata')).toEqual({ metadata: { why: 'test' } });
    await expectLedgerInvariants(knex);
  });

  it('refuses to overdraw under the lock with InsufficientFunds and leaves nothing behind', async () => {
    const { wallet: from } = await fundedWallet('XOF', 1_000n);
    const to = await withTransaction(knex, (trx) => walletOf(trx, someone(), 'XOF'));
    const reference = crypto.randomUUID();
    const error = await withTransaction(knex, (trx) =>
      post(trx, { kind: 'test.move', reference, entries: [{ accountId: from.id, amountMinor: -1_001n }, { accountId: to.id, amountMinor: 1_001n }] }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnprocessableError);
    expect(error).toMatchObject({ code: 'InsufficientFunds', details: { currency: 'XOF', available: '1000', required: '1001' } });
    expect(await knex('postings').where({ reference }).first()).toBeUndefined();
    expect(await balanceOf(knex, from.id)).toBe(1_000n);
  });

  it('refuses unbalanced postings in the service and in the database', async () => {
    const { wallet: from } = await fundedWallet('USD', 500n);
    const to = await withTransaction(knex, (trx) => walletOf(trx, someone(), 'USD'));
    await expect(
      withTransaction(knex, (trx) =>
        post(trx, { kind: 'test.move', reference: crypto.randomUUID(), entries: [{ accountId: from.id, amountMinor: -100n }, { accountId: to.id, amountMinor: 99n }] }),
      ),
    ).rejects.toThrow(/does not balance/);
    // Bypassing the service: the database's posting function refuses it too...
    const reference = crypto.randomUUID();
    expect((await sqlError(ledgerPostSql(reference, [[from.id, '-100'], [to.id, '99']]))).message).toMatch(/does not balance/);
    // ...and rows written around it are refused outright.
    const error = await sqlError(
      knex.transaction(async (trx) => {
        const [p] = await trx('postings').insert({ kind: 'test.raw', reference }).returning('id');
        await trx('entries').insert([
          { posting_id: p.id, account_id: from.id, currency: 'USD', amount_minor: '-100' },
          { posting_id: p.id, account_id: to.id, currency: 'USD', amount_minor: '99' },
        ]);
      }),
    );
    expect(error).toMatchObject({ code: '42501', message: expect.stringMatching(/only through ledger_post/) });
    expect(await knex('postings').where({ reference }).first()).toBeUndefined();
    expect(await balanceOf(knex, from.id)).toBe(500n);
    // A posting without two entries is refused as well.
    expect((await sqlError(ledgerPostSql(crypto.randomUUID(), [[from.id, '-100']]))).message).toMatch(/fewer than two entries/);
  });

  it('refuses a posting across currencies that does not balance per currency', async () => {
    const { wallet: eur } = await fundedWallet('EUR', 500n);
    const usd = await withTransaction(knex, (trx) => walletOf(trx, someone(), 'USD'));
    await expect(
      withTransaction(knex, (trx) =>
        post(trx, { kind: 'test.move', reference: crypto.randomUUID(), entries: [{ accountId: eur.id, amountMinor: -100n }, { accountId: usd.id, amountMinor: 100n }] }),
      ),
    ).rejects.toThrow(/does not balance in/);
    // The posting function takes each entry's currency from its account: the same posting, sent
    // straight to the database, still does not balance per currency.
    expect((await sqlError(ledgerPostSql(crypto.randomUUID(), [[eur.id, '-100'], [usd.id, '100']]))).message).toMatch(/does not balance in/);
    // An entry written directly, in another currency than its account's, never gets in.
    const error = await sqlError(
      knex.transaction(async (trx) => {
        await trx('entries').insert({ posting_id: crypto.randomUUID(), account_id: eur.id, currency: 'USD', amount_minor: '-100' });
      }),
    );
    expect(error.code).toBe('42501');
  });

  it('keeps entries and postings immutable', async () => {
    const { wallet } = await fundedWallet('GHS', 700n);
    const entry = await knex('entries').where({ account_id: wallet.id }).first();
    for (const attempt of [
      () => knex('entries').where({ id: entry.id }).update({ amount_minor: '1' }),
      () => knex('entries').where({ id: entry.id }).del(),
      () => knex('postings').where({ id: entry.posting_id }).update({ reference: 'changed' }),
      () => knex('postings').where({ id: entry.posting_id }).del(),
      () => knex.raw('TRUNCATE entries'),
      () => knex.raw('TRUNCATE postings CASCADE'),
    ]) {
      expect((await sqlError(attempt())).message).toMatch(/append-only/);
    }
    expect(await balanceOf(knex, wallet.id)).toBe(700n);
  });

  it('moves balances only through entries; the CHECK constraint is the last line of defence', async () => {
    const { wallet } = await fundedWallet('KES', 300n);
    expect((await sqlError(knex('ledger_accounts').where({ id: wallet.id }).update({ balance_minor: '1000000' }))).message).toMatch(
      /only through ledger entries/,
    );
    expect(
      (await sqlError(knex('ledger_accounts').insert({ owner_type: 'user', owner_id: someone(), currency: 'KES', kind: 'wallet', balance_minor: '5' })))
        .message,
    ).toMatch(/zero balance/);
    // Straight to the posting function, a balanced posting that overdraws a wallet is refused and writes nothing...
    const clearing = await withTransaction(knex, (trx) => externalClearingAccount(trx, 'KES'));
    const reference = crypto.randomUUID();
    const { rows } = await ledgerPostSql(reference, [[wallet.id, '-301'], [clearing.id, '301']]);
    expect(rows[0]).toMatchObject({ refusal: 'InsufficientFunds', refusal_detail: { account_id: wallet.id, available: '300', required: '301' }, posting_id: null });
    expect(await knex('postings').where({ reference }).first()).toBeUndefined();
    // ...and the non-negative CHECK stays the last line of defence under the posting function.
    const error = await sqlError(
      knex.transaction(async (trx) => {
        await trx.raw("SELECT set_config('ledger.posting', 'on', true)");
        await trx('ledger_accounts').where({ id: wallet.id }).update({ balance_minor: '-1' });
      }),
    );
    expect(error.constraint).toBe('ledger_accounts_non_negative');
    expect(await balanceOf(knex, wallet.id)).toBe(300n);
    // Ledger accounts are never deleted: entries point at them.
    expect((await sqlError(knex('ledger_accounts').where({ id: wallet.id }).del())).message).toMatch(/never deleted/);
  });

  it('posts one (kind, reference) only once', async () => {
    const { userId } = await fundedWallet('MAD', 100n);
    const reference = crypto.randomUUID();
    await withTransaction(knex, (trx) => fundWallet(trx, userId, 'MAD', 5n, reference));
    const error = await withTransaction(knex, (trx) => fundWallet(trx, userId, 'MAD', 5n, reference)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ code: 'DuplicatePosting' });
    const wallet = await withTransaction(knex, (trx) => walletOf(trx, userId, 'MAD'));
    expect(wallet.balanceMinor).toBe(105n);
  });

  it('refuses frozen accounts unless the posting returns money', async () => {
    const { wallet } = await fundedWallet('NGN', 1_000n);
    const transit = await withTransaction(knex, (trx) => platformAccount(trx, 'rail_transit', 'NGN', 'test'));
    const out = await withTransaction(knex, (trx) =>
      post(trx, { kind: 'test.out', reference: crypto.randomUUID(), entries: [{ accountId: wallet.id, amountMinor: -400n }, { accountId: transit.id, amountMinor: 400n }] }),
    );
    await setAccountStatus(knex, wallet.id, 'frozen');
    await expect(
      withTransaction(knex, (trx) =>
        post(trx, { kind: 'test.out', reference: crypto.randomUUID(), entries: [{ accountId: wallet.id, amountMinor: -1n }, { accountId: transit.id, amountMinor: 1n }] }),
      ),
    ).rejects.toMatchObject({ code: 'AccountFrozen' });
    await withTransaction(knex, (trx) =>
      post(
        trx,
        {
          kind: 'test.reversal',
          reference: out.reference,
          reversesPostingId: out.id,
          entries: [{ accountId: transit.id, amountMinor: -400n }, { accountId: wallet.id, amountMinor: 400n }],
        },
        { allowFrozen: true },
      ),
    );
    expect(await balanceOf(knex, wallet.id)).toBe(1_000n);
    await setAccountStatus(knex, wallet.id, 'active');
  });

  it('never deadlocks when postings lock the same accounts in opposite orders', async () => {
    const a = await fundedWallet('EUR', 100_000n);
    const b = await fundedWallet('EUR', 100_000n);
    const moves = Array.from({ length: 40 }, (_, i) => {
      const [from, to] = i % 2 === 0 ? [a.wallet, b.wallet] : [b.wallet, a.wallet];
      return withTransaction(knex, (trx) =>
        post(trx, { kind: 'test.move', reference: crypto.randomUUID(), entries: [{ accountId: from.id, amountMinor: -(BigInt(i) + 1n) }, { accountId: to.id, amountMinor: BigInt(i) + 1n }] }),
      );
    });
    await Promise.all(moves);
    // Evens move a->b (1+3+...+39 = 400), odds b->a (2+4+...+40 = 420).
    expect(await balanceOf(knex, a.wallet.id)).toBe(100_000n - 400n + 420n);
    expect(await balanceOf(knex, b.wallet.id)).toBe(100_000n + 400n - 420n);
    await expectLedgerInvariants(knex);
  });
});

describe('reconcile', () => {
  it('reports no violation on a healthy ledger', async () => {
    await fundedWallet('XAF', 42n);
    expect(await reconcile(knex)).toEqual([]);
  });
});
