import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createKnex } from '../../src/db/database';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet } from '../../src/modules/ledger';
import { IdempotencyService } from '../../src/modules/idempotency';
import { SandboxRail, TransferService } from '../../src/modules/transfers';
import { databaseKind, testDatabaseUrl, testKnex } from '../support/database';
import { createUser } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { transferClaim } from '../support/idempotency';

/**
 * A rail outcome whose write meets a terminated database connection is not left `pending`
 * until the next resume run (a minute): the write is retried at once on a new connection,
 * with backoff, so the transfer is settled when the outcome has been reported.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const opened: Knex[] = [];

afterAll(async () => {
  for (const knex of opened) await knex.destroy();
});

async function sender(): Promise<string> {
  const user = await createUser();
  await withTransaction(testKnex(), (trx) => fundWallet(trx, user.id, 'XOF', 100_000n));
  return user.id;
}

function service(knex: Knex) {
  const errors: unknown[] = [];
  const rail = new SandboxRail({ settlementDelayMs: 3_600_000, onError: (error) => errors.push(error) });
  const transfers = new TransferService({ knex, idempotency: new IdempotencyService(knex, { ttlHours: 24 }), rail });
  return { rail, transfers, errors };
}

async function statusOf(id: string): Promise<string> {
  return ((await testKnex()('transfers').where({ id }).first('status')) as { status: string }).status;
}

describe('a rail outcome whose write meets a lost database connection', () => {
  it.runIf(databaseKind() === 'postgres')('is written again at once on a new connection after pg_terminate_backend (real PostgreSQL)', { timeout: 60_000 }, async () => {
    // The service's own pool of one connection, so the terminated backend is the one it uses.
    const knex = createKnex(await testDatabaseUrl(), 'postgres', 1);
    opened.push(knex);
    const { rail, transfers, errors } = service(knex);
    const transfer = await transfers.create({ userId: await sender() }, transferClaim(crypto.randomUUID(), { amount: 700, currency: 'XOF', recipientIdentifier: '+2250708881111', rail: 'mobile_money' }), { amount: 700, currency: 'XOF', recipientIdentifier: '+2250708881111', rail: 'mobile_money' });
    await transfers.whenDispatched();

    // Another session holds the transfer's row: the outcome's write waits on it, and its
    // backend is terminated while it waits.
    const holder = await testKnex().transaction();
    try {
      await holder('transfers').where({ id: transfer.id }).forUpdate().first();
      const holderPid = ((await holder.raw('SELECT pg_backend_pid() AS pid')).rows[0] as { pid: number }).pid;
      const reporting = rail.settleAll();
      let victim: number | undefined;
      for (let i = 0; i < 200 && victim === undefined; i += 1) {
        const waiting = await testKnex().raw('SELECT pid FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [holderPid]);
        victim = (waiting.rows[0] as { pid: number } | undefined)?.pid;
        if (victim === undefined) await sleep(25);
      }
      expect(victim).toBeDefined();
      await testKnex().raw('SELECT pg_terminate_backend(?)', [victim as number]);
      await holder.commit();
      await reporting;
    } finally {
      if (!holder.isCompleted()) await holder.rollback();
    }
    // Settled by the report itself: no resume run needed.
    expect(errors).toEqual([]);
    expect(await statusOf(transfer.id)).toBe('completed');
    await expectLedgerInvariants(testKnex());
  });

  it('is written again at once when the connection fails under it (injected), on either back-end', { timeout: 60_000 }, async () => {
    const { rail, transfers, errors } = service(testKnex());
    const transfer = await transfers.create({ userId: await sender() }, transferClaim(crypto.randomUUID(), { amount: 300, currency: 'XOF', recipientIdentifier: '+2250708881112', rail: 'mobile_money' }), { amount: 300, currency: 'XOF', recipientIdentifier: '+2250708881112', rail: 'mobile_money' });
    await transfers.whenDispatched();
    // The next two transactions die with their connection, as under pg_terminate_backend.
    const knex = testKnex();
    const transaction = knex.transaction.bind(knex);
    let failures = 2;
    const spy = vi.spyOn(knex, 'transaction').mockImplementation(((...args: Parameters<Knex['transaction']>) => {
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
      }
      return (transaction as (...a: unknown[]) => unknown)(...args);
    }) as never);
    try {
      await rail.settleAll();
    } finally {
      spy.mockRestore();
    }
    expect(failures).toBe(0);
    expect(errors).toEqual([]);
    expect(await statusOf(transfer.id)).toBe('completed');
  });

  it('is not retried for an error that is no connection loss (it would fail the same way again)', async () => {
    const { rail, transfers, errors } = service(testKnex());
    const transfer = await transfers.create({ userId: await sender() }, transferClaim(crypto.randomUUID(), { amount: 300, currency: 'XOF', recipientIdentifier: '+2250708881113', rail: 'mobile_money' }), { amount: 300, currency: 'XOF', recipientIdentifier: '+2250708881113', rail: 'mobile_money' });
    await transfers.whenDispatched();
    const spy = vi.spyOn(testKnex(), 'transaction').mockRejectedValue(Object.assign(new Error('check constraint'), { code: '23514' }));
    try {
      await rail.settleAll();
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
    expect(errors).toHaveLength(1);
    expect(await statusOf(transfer.id)).toBe('pending');
  });
});
