import crypto from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet, setAccountStatus, walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { databaseKind, testKnex } from '../support/database';
import { createUser, type TestUser } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { transferClaim } from '../support/idempotency';

/**
 * Group commit of POST /transfers, as a property: random transfers fired at once
 * through the batcher (so that they share batches), with items that fail on their own
 * (insufficient funds, an unknown recipient, a frozen wallet, oneself), keys sent several
 * times at once, replays of keys acknowledged in earlier runs and, on real PostgreSQL, a
 * connection killed in the middle of a batch (a test trigger terminates its own backend once
 * for a marked note: the whole batch fails and its items run again one by one). After every
 * run: each currency's entries sum to zero, no balance is negative, every balance equals its
 * entries (expectLedgerInvariants); the wallets hold what they held (P2P only); every
 * acknowledged key has exactly one effect, and no refused or failed key has any.
 */

const knex = testKnex();
const realServer = databaseKind() === 'postgres';
let app: App;
let users: TestUser[];
let frozen: TestUser;
const acknowledgedBefore: Array<{ from: number; key: string; input: TransferInput; id: string }> = [];
let killsAsked = 0;

interface TransferInput {
  amount: number;
  currency: string;
  recipientIdentifier: string;
  note?: string;
}

const REFUSALS = ['ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed', 'InsufficientFunds', 'SelfTransfer', 'RecipientNotFound', 'WalletFrozen'];

beforeAll(async () => {
  app = await buildTestApp();
  users = await Promise.all(Array.from({ length: 4 }, () => createUser()));
  frozen = await createUser();
  await withTransaction(knex, async (trx) => {
    for (const user of [...users, frozen]) await fundWallet(trx, user.id, 'XOF', 3_000n);
    await setAccountStatus(trx, (await walletOf(trx, frozen.id, 'XOF')).id, 'frozen');
  });
  if (realServer) {
    // Kept out of the application's schema: the database-functions test lists that schema's functions.
    await knex.raw(`
      CREATE SCHEMA IF NOT EXISTS test_faults;
      CREATE OR REPLACE FUNCTION test_faults.kill_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval(substr(NEW.note, length('kill-once:') + 1)) = 1 THEN
          PERFORM pg_terminate_backend(pg_backend_pid());
          PERFORM pg_sleep(5);
        END IF;
        RETURN NEW;
      END;
      $$;
      DROP TRIGGER IF EXISTS transfers_test_kill_once ON transfers;
      CREATE TRIGGER transfers_test_kill_once AFTER INSERT ON transfers FOR EACH ROW
        WHEN (NEW.note LIKE 'kill-once:%') EXECUTE FUNCTION test_faults.kill_once();
    `);
  }
});

afterAll(async () => {
  if (realServer) await knex.raw('DROP TRIGGER IF EXISTS transfers_test_kill_once ON transfers');
});

async function walletTotal(): Promise<bigint> {
  let total = 0n;
  for (const user of [...users, frozen]) total += await balanceOf(knex, (await withTransaction(knex, (trx) => walletOf(trx, user.id, 'XOF'))).id);
  return total;
}

const stepArb = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('transfer' as const),
      from: fc.nat({ max: 3 }),
      to: fc.constantFrom<number | 'nobody' | 'frozen'>(0, 1, 2, 3, 'nobody', 'frozen'),
      minor: fc.bigInt({ min: 1n, max: 1_500n }),
      sends: fc.integer({ min: 1, max: 3 }),
      kill: realServer ? fc.integer({ min: 0, max: 9 }).map((n) => n < 3) : fc.constant(false),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), pick: fc.nat() }) },
);

describe('group commit of transfers (property)', () => {
  it('each item its own outcome; money conserved; every acknowledged key exactly one effect, even when a batch dies', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 2, maxLength: 24 }), async (steps) => {
        const walletsBefore = await walletTotal();
        const transfersBefore = await knex('transfers').whereIn('sender_user_id', users.map((u) => u.id)).count<{ count: string }[]>('* as count');
        const acknowledged = new Map<string, string>(); // key -> the one transfer id answered 200
        const sentKeys: string[] = [];
        await Promise.all(
          steps.map(async (step) => {
            if (step.kind === 'replay') {
              const earlier = acknowledgedBefore[step.pick % Math.max(1, acknowledgedBefore.length)];
              if (!earlier) return;
              const error = await app.services.transfers.create({ userId: (users[earlier.from] as TestUser).id }, transferClaim(earlier.key, earlier.input), earlier.input).then(
                () => undefined,
                (reason: unknown) => reason as { code?: string; details?: { resource_id?: string } },
              );
              // A finished key is answered as finished, with the transfer it made: never a second effect.
              expect({ code: error?.code, id: error?.details?.resource_id }).toEqual({ code: 'IdempotencyKeyAlreadyProcessed', id: earlier.id });
              return;
            }
            const from = users[step.from] as TestUser;
            const to = typeof step.to === 'number' ? (users[step.to] as TestUser).email : step.to === 'frozen' ? frozen.email : `nobody-${crypto.randomUUID()}@test.example`;
            const key = crypto.randomUUID();
            sentKeys.push(key);
            let note: string | undefined;
            if (step.kill) {
              const sequence = `test_faults.kill_${crypto.randomBytes(6).toString('hex')}`;
              await knex.raw(`CREATE SEQUENCE ${sequence}`);
              note = `kill-once:${sequence}`;
              killsAsked += 1;
            }
            const input: TransferInput = { amount: Number(step.minor), currency: 'XOF', recipientIdentifier: to as string, ...(note ? { note } : {}) };
            const outcomes = await Promise.allSettled(Array.from({ length: step.sends }, () => app.services.transfers.create({ userId: from.id }, transferClaim(key, input), input)));
            const ids = new Set<string>();
            for (const outcome of outcomes) {
              if (outcome.status === 'fulfilled') ids.add(outcome.value.id);
              else expect(REFUSALS, String((outcome.reason as Error).stack)).toContain((outcome.reason as { code?: string }).code);
            }
            expect(ids.size).toBeLessThanOrEqual(1);
            const [id] = [...ids];
            if (id) {
              acknowledged.set(key, id);
              acknowledgedBefore.push({ from: step.from, key, input, id });
            }
          }),
        );

        for (const key of sentKeys) {
          const id = acknowledged.get(key);
          const rows = await knex('idempotency_keys').where({ key, operation: 'createTransfer' }).select('resource_id', 'status');
          if (id === undefined) {
            // Refused every time: the key is free and nothing moved.
            expect(rows).toEqual([]);
            continue;
          }
          expect(rows).toEqual([{ resource_id: id, status: 'completed' }]);
          expect(await knex('transfers').where({ id }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
          expect(await knex('postings').where({ reference: id, kind: 'transfer.p2p' })).toHaveLength(1);
        }
        const transfersAfter = await knex('transfers').whereIn('sender_user_id', users.map((u) => u.id)).count<{ count: string }[]>('* as count');
        expect(Number(transfersAfter[0]?.count) - Number(transfersBefore[0]?.count)).toBe(acknowledged.size);
        expect(await walletTotal()).toBe(walletsBefore);
        await expectLedgerInvariants(knex);
      }),
      { numRuns: 12 },
    );
    const { sizes, batchesFailed } = app.services.transfers.batcher;
    // Transfers fired together shared batches, and a killed batch was answered item by item.
    expect(sizes.length - 1).toBeGreaterThan(1);
    if (killsAsked > 0) expect(batchesFailed).toBeGreaterThan(0);
  });
});
