import crypto from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { ensureAccount, platformShardOf, PLATFORM_SHARDS, post, walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { createCaller, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { escrowAction, expectEscrowMoneyConsistent, openEscrow, platformBalance } from '../support/escrows';

/** UGX (no decimals): no other test file uses it, so its holding and fee accounts are this file's alone. */
const CURRENCY = 'UGX';
const knex = testKnex();
let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

async function opened(buyer: TestCaller, seller: TestCaller): Promise<string> {
  return (await openEscrow(app, buyer, seller, { amount: 1000, currency: CURRENCY, description: 'Sharded holding' })).id;
}

function act(by: TestCaller, id: string, action: 'fund' | 'accept') {
  return escrowAction(app, by, id, action, {});
}

/** Balances of the currency's platform accounts of one kind, by external_ref ('' for the unsharded one). */
async function accountsOf(kind: 'escrow_holding' | 'fees'): Promise<Map<string, bigint>> {
  const rows = (await knex('ledger_accounts').where({ owner_type: 'platform', kind, currency: CURRENCY }).select('external_ref', 'balance_minor')) as Array<{ external_ref: string | null; balance_minor: string }>;
  return new Map(rows.map((row) => [row.external_ref ?? '', BigInt(row.balance_minor)]));
}

describe('the shard of a reference', () => {
  it('is stable, one of PLATFORM_SHARDS, and spreads references over the shards', () => {
    const references = Array.from({ length: 6000 }, () => crypto.randomUUID());
    const shards = references.map(platformShardOf);
    expect(references.map(platformShardOf)).toEqual(shards);
    expect(shards.every((shard) => /^shard-(\d|[1-9]\d|1\d\d|2[0-4]\d|25[0-5])$/.test(shard))).toBe(true);
    expect(PLATFORM_SHARDS).toBe(256);
    // 6000 uniform draws over 256 shards: every shard is hit (a miss has probability below 1e-7).
    expect(new Set(shards).size).toBe(PLATFORM_SHARDS);
    expect(platformShardOf('00000000-0000-0000-0000-000000000000')).toBe(platformShardOf('00000000-0000-0000-0000-000000000000'));
    expect(platformShardOf('a')).not.toBe(platformShardOf('b'));
  });
});

describe('escrow money in sharded platform accounts', () => {
  it("funding credits the escrow's own holding shard; the release takes it back out of that shard and pays the fee into the fee shard", async () => {
    const buyer = await createCaller(app, { [CURRENCY]: 10_000n });
    const seller = await createCaller(app);
    const id = await opened(buyer, seller);
    const shard = platformShardOf(id);
    const holdingBefore = (await accountsOf('escrow_holding')).get(shard) ?? 0n;
    const feesBefore = (await accountsOf('fees')).get(shard) ?? 0n;

    expect((await act(buyer, id, 'fund')).status).toBe(200);
    const funded = await accountsOf('escrow_holding');
    expect(funded.get(shard)).toBe(holdingBefore + 1010n);

    const accepted = await act(buyer, id, 'accept');
    expect([accepted.status, accepted.body.data.status]).toEqual([200, 'released']);
    expect((await accountsOf('escrow_holding')).get(shard)).toBe(holdingBefore);
    expect((await accountsOf('fees')).get(shard)).toBe(feesBefore + 10n);
    await expectEscrowMoneyConsistent(knex, CURRENCY);
    await expectLedgerInvariants(knex);
  });

  it('an escrow funded into the unsharded holding account (before sharding) is settled out of that account', async () => {
    const buyer = await createCaller(app, { [CURRENCY]: 10_000n });
    const seller = await createCaller(app);
    const id = await opened(buyer, seller);
    // What the code before sharding did: fund into the one holding account of the currency.
    await withTransaction(knex, async (trx) => {
      const legacy = await ensureAccount(trx, { ownerType: 'platform', ownerId: null, currency: CURRENCY, kind: 'escrow_holding' });
      const wallet = await walletOf(trx, buyer.user.id, CURRENCY);
      const posting = await post(trx, {
        kind: 'escrow.funding',
        reference: id,
        metadata: { escrow_id: id },
        entries: [
          { accountId: wallet.id, amountMinor: -1010n },
          { accountId: legacy.id, amountMinor: 1010n },
        ],
      });
      await trx('escrows').where({ id }).update({ status: 'funded', funding_posting_id: posting.id, funded_at: new Date() });
    });
    const before = await accountsOf('escrow_holding');
    const totalBefore = await platformBalance(knex, 'escrow_holding', CURRENCY);

    const accepted = await act(buyer, id, 'accept');
    expect([accepted.status, accepted.body.data.status]).toEqual([200, 'released']);
    const after = await accountsOf('escrow_holding');
    expect(after.get('')).toBe((before.get('') as bigint) - 1010n);
    expect(after.get(platformShardOf(id))).toBe(before.get(platformShardOf(id)));
    expect(await platformBalance(knex, 'escrow_holding', CURRENCY)).toBe(totalBefore - 1010n);
    await expectEscrowMoneyConsistent(knex, CURRENCY);
    await expectLedgerInvariants(knex);
  });
});
