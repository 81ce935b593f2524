import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet, post, walletOf, externalClearingAccount } from '../../src/modules/ledger';
import { IdempotencyService } from '../../src/modules/idempotency';
import { SandboxRail, TransferService } from '../../src/modules/transfers';
import { databaseKind, testKnex } from '../support/database';
import { createUser } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { transferClaim } from '../support/idempotency';

interface PooledConnection {
  end(): Promise<void>;
  __knex__disposed?: unknown;
}

describe('database back-end', () => {
  it('behaves like PostgreSQL on both back-ends: int8 as string, delete counts, multi-statement SQL', async () => {
    const knex = testKnex();
    const { rows } = await knex.raw('SELECT 9007199254740993::int8 AS big');
    expect(rows[0].big).toBe('9007199254740993');
    const deleted = await knex('users').where({ id: '00000000-0000-0000-0000-000000000000' }).del();
    expect(deleted).toBe(0);
    const multi = await knex.raw('SELECT 1 AS a; SELECT 2 AS b');
    expect(Array.isArray(multi)).toBe(true);
    expect(['postgres', 'embedded']).toContain(databaseKind());
  });

  it('keeps every money path working after the connection is replaced (the embedded session keeps the old prepared statements)', async () => {
    const knex = testKnex();
    const transfers = new TransferService({ knex, idempotency: new IdempotencyService(knex, { ttlHours: 24 }), rail: new SandboxRail({ settlementDelayMs: 3_600_000 }) });
    const [alice, bob] = [await createUser(), await createUser()];
    const moveMoney = async () => {
      await withTransaction(knex, (trx) => fundWallet(trx, alice.id, 'XOF', 1_000n));
      const body = { amount: 300, currency: 'XOF', recipientIdentifier: bob.email as string };
      await transfers.create({ userId: alice.id }, transferClaim(crypto.randomUUID(), body), body);
      await withTransaction(knex, async (trx) => {
        const clearing = await externalClearingAccount(trx, 'XOF');
        const wallet = await walletOf(trx, bob.id, 'XOF');
        await post(trx, { kind: 'test.payout', reference: crypto.randomUUID(), entries: [{ accountId: wallet.id, amountMinor: -100n }, { accountId: clearing.id, amountMinor: 100n }] });
      });
    };
    await moveMoney(); // prepares the named statements on this connection

    // Replace the connection as knex does after a connection error: dispose of it, end it.
    const client = knex.client as { acquireConnection(): Promise<PooledConnection>; releaseConnection(c: PooledConnection): Promise<unknown> };
    const old = await client.acquireConnection();
    old.__knex__disposed = new Error('replaced by the test');
    await old.end();
    await client.releaseConnection(old);

    await moveMoney(); // prepares the same statement names again, on a new connection
    const bobWallet = await withTransaction(knex, (trx) => walletOf(trx, bob.id, 'XOF'));
    expect(await balanceOf(knex, bobWallet.id)).toBe(2n * (300n - 100n));
    await expectLedgerInvariants(knex);
  });
});
