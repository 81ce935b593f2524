import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { ConflictError, UnprocessableError } from '../../src/errors';
import { ensureAccount, externalClearingAccount, fundWallet, platformAccount, post, reconcile, setAccountStatus, walletOf } from '../../src/modules/ledger';
import { LedgerRepository } from '../../src/modules/ledger/ledger-repository';
import { testKnex } from '../support/database';
import { balanceOf } from '../support/ledger-invariants';
import { failure, fundedWallet as fundedWalletOn } from '../support/failures';

/**
 * The ledger service's own refusals and what a posting returns, each asserted exactly
 * (message, error class, details, amounts): the posting path is the only code that moves money.
 */
const knex = testKnex();
const fundedWallet = (currency: string, amountMinor: bigint) => fundedWalletOn(knex, currency, amountMinor);
const someone = () => crypto.randomUUID();
/** Largest PostgreSQL bigint, written out. */
const BIGINT_MAX = 9_223_372_036_854_775_807n;



describe('ledger.post refuses malformed postings before the database', () => {
  it('outside a transaction', async () => {
    const { wallet } = await fundedWallet('EUR', 100n);
    const clearing = await withTransaction(knex, (trx) => externalClearingAccount(trx, 'EUR'));
    const error = await failure(
      post(knex as unknown as Knex.Transaction, {
        kind: 'test.guard',
        reference: someone(),
        entries: [
          { accountId: wallet.id, amountMinor: -1n },
          { accountId: clearing.id, amountMinor: 1n },
        ],
      }),
    );
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('ledger.post must run inside a transaction');
    expect(await balanceOf(knex, wallet.id)).toBe(100n);
  });

  it('with fewer than two entries, a non-bigint, zero or out-of-range amount', async () => {
    const { wallet } = await fundedWallet('EUR', 100n);
    const clearing = await withTransaction(knex, (trx) => externalClearingAccount(trx, 'EUR'));
    const attempt = (entries: Array<{ accountId: string; amountMinor: bigint }>) =>
      failure(withTransaction(knex, (trx) => post(trx, { kind: 'test.guard', reference: someone(), entries })));
    const cases: Array<[Array<{ accountId: string; amountMinor: bigint }>, string]> = [
      [[], 'a posting needs at least two entries'],
      [[{ accountId: wallet.id, amountMinor: 5n }], 'a posting needs at least two entries'],
      [
        [
          { accountId: wallet.id, amountMinor: -5 as unknown as bigint },
          { accountId: clearing.id, amountMinor: 5 as unknown as bigint },
        ],
        'entry amounts are bigint minor units',
      ],
      [
        [
          { accountId: wallet.id, amountMinor: 0n },
          { accountId: clearing.id, amountMinor: 0n },
        ],
        'an entry amount is never zero',
      ],
      // Each bound on its own: the other entry is in range (the posting would not balance,
      // but the range is checked first).
      [
        [
          { accountId: wallet.id, amountMinor: BIGINT_MAX + 1n },
          { accountId: clearing.id, amountMinor: -1n },
        ],
        'entry amount out of range',
      ],
      [
        [
          { accountId: clearing.id, amountMinor: -(BIGINT_MAX + 1n) },
          { accountId: wallet.id, amountMinor: 1n },
        ],
        'entry amount out of range',
      ],
    ];
    for (const [entries, message] of cases) {
      const error = await attempt(entries);
      expect(error, message).toBeInstanceOf(TypeError);
      expect(error.message).toBe(message);
    }
    expect(await balanceOf(knex, wallet.id)).toBe(100n);
  });

  it('takes entries of exactly the bigint maximum, debit and credit', async () => {
    // A clearing account of its own (external_clearing may go negative), so no shared balance overflows.
    const source = await withTransaction(knex, (trx) => platformAccount(trx, 'external_clearing', 'GNF', `test-max-${someone()}`));
    const userId = someone();
    const posting = await withTransaction(knex, async (trx) =>
      post(trx, {
        kind: 'test.max',
        reference: someone(),
        entries: [
          { accountId: source.id, amountMinor: -BIGINT_MAX },
          { accountId: (await walletOf(trx, userId, 'GNF')).id, amountMinor: BIGINT_MAX },
        ],
      }),
    );
    expect(posting.balancesAfter.get(source.id)).toBe(-BIGINT_MAX);
    const wallet = await withTransaction(knex, (trx) => walletOf(trx, userId, 'GNF'));
    expect(wallet.balanceMinor).toBe(BIGINT_MAX);
  });

  it("turns the posting function's programming errors into TypeErrors: unbalanced, unknown account, entry without account", async () => {
    const { wallet } = await fundedWallet('USD', 500n);
    const other = await withTransaction(knex, (trx) => walletOf(trx, someone(), 'USD'));
    const attempt = (entries: Array<{ accountId: string; amountMinor: bigint }>) =>
      failure(withTransaction(knex, (trx) => post(trx, { kind: 'test.guard', reference: 'guard-1', entries })));
    const unbalanced = await attempt([
      { accountId: wallet.id, amountMinor: -100n },
      { accountId: other.id, amountMinor: 99n },
    ]);
    expect(unbalanced).toBeInstanceOf(TypeError);
    expect(unbalanced.message).toBe('posting test.guard/guard-1 does not balance in USD (sum -1)');
    const missingId = someone();
    const unknown = await attempt([
      { accountId: wallet.id, amountMinor: -100n },
      { accountId: missingId, amountMinor: 100n },
    ]);
    expect(unknown).toBeInstanceOf(TypeError);
    expect(unknown.message).toBe(`unknown ledger account ${missingId}`);
    const noAccount = await attempt([
      { accountId: wallet.id, amountMinor: -100n },
      { accountId: null as unknown as string, amountMinor: 100n },
    ]);
    expect(noAccount).toBeInstanceOf(TypeError);
    expect(noAccount.message).toBe('posting test.guard/guard-1: an entry needs an account and a non-zero amount');
    expect(await balanceOf(knex, wallet.id)).toBe(500n);
  });
});

describe('ledger.post and other database errors', () => {
  it('passes them through unchanged (only the posting function\'s own programming errors become TypeErrors)', async () => {
    const { wallet } = await fundedWallet('USD', 500n);
    const other = await withTransaction(knex, (trx) => walletOf(trx, someone(), 'USD'));
    const error = await failure(
      withTransaction(knex, (trx) =>
        post(trx, {
          kind: 'test.guard',
          reference: someone(),
          reversesPostingId: 'not-a-uuid',
          entries: [
            { accountId: wallet.id, amountMinor: -100n },
            { accountId: other.id, amountMinor: 100n },
          ],
        }),
      ),
    );
    expect(error).not.toBeInstanceOf(TypeError);
    expect(error.code).toBe('22P02');
    expect(await balanceOf(knex, wallet.id)).toBe(500n);
  });
});

describe('ensureAccount racing another transaction (the repository stubbed)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('returns the account the other transaction created between its read and its insert', async () => {
    const userId = someone();
    const created = await withTransaction(knex, (trx) => walletOf(trx, userId, 'EUR'));
    const findAccount = vi.spyOn(LedgerRepository.prototype, 'findAccount').mockResolvedValueOnce(undefined);
    const insert = vi.spyOn(LedgerRepository.prototype, 'insertAccountIfAbsent').mockResolvedValueOnce(undefined);
    const raced = await withTransaction(knex, (trx) => walletOf(trx, userId, 'EUR'));
    expect(raced.id).toBe(created.id);
    expect(findAccount).toHaveBeenCalledTimes(2);
    expect(insert).toHaveBeenCalledTimes(1);
  });

  it('fails loudly, naming the account, when the conflicting account cannot be read', async () => {
    const userId = someone();
    vi.spyOn(LedgerRepository.prototype, 'findAccount').mockResolvedValue(undefined);
    vi.spyOn(LedgerRepository.prototype, 'insertAccountIfAbsent').mockResolvedValue(undefined);
    const error = await failure(withTransaction(knex, (trx) => walletOf(trx, userId, 'EUR')));
    expect(error.message).toBe(`ledger account {"ownerType":"user","ownerId":"${userId}","currency":"EUR","kind":"wallet"} vanished after a conflicting insert`);
  });
});

describe('ledger.post refusals of the business rules, exactly', () => {
  it('InsufficientFunds names the account, the currency and both amounts in the currency\'s decimals', async () => {
    const { wallet } = await fundedWallet('BHD', 1_000n);
    const to = await withTransaction(knex, (trx) => walletOf(trx, someone(), 'BHD'));
    const error = await failure(
      withTransaction(knex, (trx) =>
        post(trx, {
          kind: 'test.move',
          reference: someone(),
          entries: [
            { accountId: wallet.id, amountMinor: -1_001n },
            { accountId: to.id, amountMinor: 1_001n },
          ],
        }),
      ),
    );
    expect(error).toBeInstanceOf(UnprocessableError);
    expect(error.code).toBe('InsufficientFunds');
    expect(error.message).toBe('Insufficient funds: the BHD balance does not cover this operation.');
    expect(error.details).toEqual({ account_id: wallet.id, currency: 'BHD', available: '1.000', required: '1.001' });
  });

  it('AccountFrozen names the frozen account', async () => {
    const { wallet } = await fundedWallet('NGN', 1_000n);
    const transit = await withTransaction(knex, (trx) => platformAccount(trx, 'rail_transit', 'NGN', 'test-guards'));
    await setAccountStatus(knex, wallet.id, 'frozen');
    try {
      const error = await failure(
        withTransaction(knex, (trx) =>
          post(trx, {
            kind: 'test.out',
            reference: someone(),
            entries: [
              { accountId: wallet.id, amountMinor: -1n },
              { accountId: transit.id, amountMinor: 1n },
            ],
          }),
        ),
      );
      expect(error).toBeInstanceOf(ConflictError);
      expect(error.code).toBe('AccountFrozen');
      expect(error.message).toBe('A ledger account of this operation is frozen: no money can move in or out of it.');
      expect(error.details).toEqual({ account_id: wallet.id });
    } finally {
      await setAccountStatus(knex, wallet.id, 'active');
    }
    expect(await balanceOf(knex, wallet.id)).toBe(1_000n);
  });

  it('DuplicatePosting names the kind and the reference', async () => {
    const { userId } = await fundedWallet('MAD', 100n);
    const reference = someone();
    await withTransaction(knex, (trx) => fundWallet(trx, userId, 'MAD', 5n, reference));
    const error = await failure(withTransaction(knex, (trx) => fundWallet(trx, userId, 'MAD', 5n, reference)));
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.code).toBe('DuplicatePosting');
    expect(error.message).toBe(`The wallet.funding posting for ${reference} was already recorded.`);
  });
});

describe('what a posting returns', () => {
  it('its id, kind, reference, metadata (empty when none), reversed posting and time', async () => {
    const { wallet } = await fundedWallet('KES', 1_000n);
    const transit = await withTransaction(knex, (trx) => platformAccount(trx, 'rail_transit', 'KES', 'test-guards'));
    const reference = someone();
    const before = Date.now();
    const out = await withTransaction(knex, (trx) =>
      post(trx, {
        kind: 'test.out',
        reference,
        entries: [
          { accountId: wallet.id, amountMinor: -400n },
          { accountId: transit.id, amountMinor: 400n },
        ],
      }),
    );
    expect(out.kind).toBe('test.out');
    expect(out.reference).toBe(reference);
    expect(out.metadata).toEqual({});
    expect(out.reversesPostingId).toBeNull();
    expect(out.createdAt).toBeInstanceOf(Date);
    expect(Math.abs(out.createdAt.getTime() - before)).toBeLessThan(60_000);
    expect(await knex('postings').where({ id: out.id }).first('kind', 'reference', 'metadata', 'reverses_posting_id')).toEqual({
      kind: 'test.out',
      reference,
      metadata: {},
      reverses_posting_id: null,
    });
    const back = await withTransaction(knex, (trx) =>
      post(trx, {
        kind: 'test.reversal',
        reference,
        metadata: { reason: 'returned' },
        reversesPostingId: out.id,
        entries: [
          { accountId: transit.id, amountMinor: -400n },
          { accountId: wallet.id, amountMinor: 400n },
        ],
      }),
    );
    expect(back.reversesPostingId).toBe(out.id);
    expect(back.metadata).toEqual({ reason: 'returned' });
    expect(await knex('postings').where({ id: back.id }).first('reverses_posting_id', 'metadata')).toEqual({ reverses_posting_id: out.id, metadata: { reason: 'returned' } });
    expect(await balanceOf(knex, wallet.id)).toBe(1_000n);
  });
});

describe('fundWallet', () => {
  it('credits the wallet from the external clearing account, naming the user', async () => {
    const userId = someone();
    const reference = someone();
    const posting = await withTransaction(knex, (trx) => fundWallet(trx, userId, 'RWF', 2_500n, reference));
    const [wallet, clearing] = await withTransaction(knex, async (trx) => [await walletOf(trx, userId, 'RWF'), await externalClearingAccount(trx, 'RWF')]);
    expect(posting.kind).toBe('wallet.funding');
    expect(posting.reference).toBe(reference);
    expect(posting.metadata).toEqual({ user_id: userId });
    expect(new Map(posting.entries.map((e) => [e.accountId, e.amountMinor]))).toEqual(
      new Map([
        [clearing!.id, -2_500n],
        [wallet!.id, 2_500n],
      ]),
    );
    expect(wallet!.balanceMinor).toBe(2_500n);
  });

  it('refuses a zero or negative amount itself', async () => {
    for (const amount of [0n, -1n]) {
      const error = await failure(withTransaction(knex, (trx) => fundWallet(trx, someone(), 'RWF', amount)));
      expect(error).toBeInstanceOf(TypeError);
      expect(error.message).toBe('a funding amount is positive');
    }
  });
});

describe('ensureAccount', () => {
  it('a platform account has no owner id, every other account has one', async () => {
    const message = 'a platform account has no owner id; every other account has one';
    const platformWithOwner = await failure(withTransaction(knex, (trx) => ensureAccount(trx, { ownerType: 'platform', ownerId: someone(), currency: 'EUR', kind: 'fees' })));
    expect(platformWithOwner).toBeInstanceOf(TypeError);
    expect(platformWithOwner.message).toBe(message);
    const userWithoutOwner = await failure(withTransaction(knex, (trx) => ensureAccount(trx, { ownerType: 'user', ownerId: null, currency: 'EUR', kind: 'wallet' })));
    expect(userWithoutOwner).toBeInstanceOf(TypeError);
    expect(userWithoutOwner.message).toBe(message);
  });

  it('only the external clearing kind may go negative', async () => {
    const [fees, transit, clearing, wallet] = await withTransaction(knex, async (trx) => [
      await platformAccount(trx, 'fees', 'CAD'),
      await platformAccount(trx, 'rail_transit', 'CAD', 'test-guards'),
      await platformAccount(trx, 'external_clearing', 'CAD', `test-guards-${someone()}`),
      await walletOf(trx, someone(), 'CAD'),
    ]);
    expect([fees!.allowNegative, transit!.allowNegative, clearing!.allowNegative, wallet!.allowNegative]).toEqual([false, false, true, false]);
    expect([fees!.kind, transit!.kind, clearing!.kind, wallet!.kind]).toEqual(['fees', 'rail_transit', 'external_clearing', 'wallet']);
  });
});

describe('reconcile', () => {
  it('reads the whole ledger in one read-only repeatable-read transaction', async () => {
    const statements: string[] = [];
    const listener = (query: { sql: string }) => statements.push(query.sql);
    knex.on('query', listener);
    try {
      expect(await reconcile(knex)).toEqual([]);
    } finally {
      knex.off('query', listener);
    }
    expect(statements.map((sql) => sql.toLowerCase()).find((sql) => sql.startsWith('begin') || sql.includes('transaction'))).toMatch(/repeatable read.*read only|read only.*repeatable read/);
  });
});
