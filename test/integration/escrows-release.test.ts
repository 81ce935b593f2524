import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EscrowService } from '../../src/modules/escrows';
import { findWallets, fundWallet, setAccountStatus } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { databaseKind, testKnex } from '../support/database';
import { accessTokenFor, bearer, walletBalance, type TestUser } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { escrowThroughService, expectEscrowMoneyConsistent, platformBalance } from '../support/escrows';

/** XAF: no other test file uses it, so its holding and fee accounts are this file's alone. */
const CURRENCY = 'XAF';
const AMOUNT = 500_000n;
const THREE_DAYS_MS = 259_200_000;
const knex = testKnex();
let app: App;
const clock = new Date();

beforeAll(async () => {
  app = await buildTestApp({ now: () => clock });
});

/** Another API instance's escrow service, with its own clock (the release job runs there). */
function instanceAt(now: Date): EscrowService {
  return new EscrowService({ knex, feeBps: 100, clock: () => now });
}

interface Party {
  user: TestUser;
}

/** A delivered escrow of 500,000 XAF (fee 5,000 on the buyer), its inspection ending at clock + 3 days. */
async function delivered(): Promise<{ id: string; buyer: Party; seller: Party }> {
  const { id, buyer, seller } = await escrowThroughService(app.services.escrows, {
    status: 'delivered',
    buyerBalance: AMOUNT + 5_000n,
    input: { amount: Number(AMOUNT), currency: CURRENCY, description: 'Race' },
  });
  return { id, buyer: { user: buyer }, seller: { user: seller } };
}

async function statusOf(id: string): Promise<string> {
  return ((await knex('escrows').where({ id }).first('status')) as { status: string }).status;
}

async function settlementCount(id: string): Promise<number> {
  return (await knex('postings').where({ kind: 'escrow.settlement', reference: id })).length;
}

describe('the automatic release job', () => {
  it('several instances at once release each due escrow exactly once, at most a batch per run, and later runs find nothing', async () => {
    const escrows = await Promise.all(Array.from({ length: 8 }, () => delivered()));
    const later = new Date(clock.getTime() + THREE_DAYS_MS);
    const notYet = instanceAt(new Date(later.getTime() - 1));
    await notYet.releaseDue({ batchSize: 100 });
    for (const { id } of escrows) expect(await statusOf(id)).toBe('delivered');

    const instances = [instanceAt(later), instanceAt(later), instanceAt(later)];
    const rounds: number[][] = [];
    for (let round = 0; round < 4; round += 1) rounds.push(await Promise.all(instances.map((instance) => instance.releaseDue({ batchSize: 2 }))));
    for (const counts of rounds) for (const count of counts) expect(count).toBeLessThanOrEqual(2);
    for (const { id, seller } of escrows) {
      expect(await statusOf(id)).toBe('released');
      expect(await settlementCount(id)).toBe(1);
      expect(await walletBalance(seller.user.id, CURRENCY)).toBe(AMOUNT);
    }
    expect(await Promise.all(instances.map((instance) => instance.releaseDue({ batchSize: 100 })))).toEqual([0, 0, 0]);
    await expectEscrowMoneyConsistent(knex, CURRENCY);
  });

  it('skips an escrow another transaction holds instead of waiting for it, and releases it on a later run', async () => {
    const held = await delivered();
    const free = await delivered();
    const job = instanceAt(new Date(clock.getTime() + THREE_DAYS_MS));
    if (databaseKind() === 'postgres') {
      // An accept in progress holds the row: the job must not wait for it (SKIP LOCKED).
      const trx = await knex.transaction();
      await trx('escrows').where({ id: held.id }).forUpdate().first();
      const started = Date.now();
      await job.releaseDue({ batchSize: 100 });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await statusOf(free.id)).toBe('released');
      expect(await statusOf(held.id)).toBe('delivered');
      await trx.commit();
    }
    await job.releaseDue({ batchSize: 100 });
    expect([await statusOf(held.id), await statusOf(free.id)]).toEqual(['released', 'released']);
  });

  it('an escrow whose release fails (frozen seller wallet) is retried later and does not block the others', async () => {
    const blocked = await delivered();
    const other = await delivered();
    await withTransaction(knex, (trx) => fundWallet(trx, blocked.seller.user.id, CURRENCY, 1n));
    const wallet = (await findWallets(knex, [blocked.seller.user.id], CURRENCY)).get(blocked.seller.user.id);
    expect(wallet).toBeDefined();
    await setAccountStatus(knex, wallet?.id as string, 'frozen');
    const due = new Date(clock.getTime() + THREE_DAYS_MS);
    await instanceAt(due).releaseDue({ batchSize: 100 });
    expect(await statusOf(other.id)).toBe('released');
    expect(await statusOf(blocked.id)).toBe('delivered');
    const row = (await knex('escrows').where({ id: blocked.id }).first('auto_release_at')) as { auto_release_at: Date };
    expect(row.auto_release_at.getTime()).toBe(due.getTime() + 60_000);
    await setAccountStatus(knex, wallet?.id as string, 'active');
    await instanceAt(new Date(due.getTime() + 59_000)).releaseDue({ batchSize: 100 });
    expect(await statusOf(blocked.id)).toBe('delivered');
    await instanceAt(new Date(due.getTime() + 60_000)).releaseDue({ batchSize: 100 });
    expect(await statusOf(blocked.id)).toBe('released');
    expect(await walletBalance(blocked.seller.user.id, CURRENCY)).toBe(AMOUNT + 1n);
  });
});

describe('racing actions on one delivered escrow', () => {
  it('20 concurrent accepts, the release job and a dispute: exactly one outcome, the money moves once', async () => {
    const outcomes = new Set<string>();
    for (let race = 0; race < 4; race += 1) {
      const { id, buyer, seller } = await delivered();
      const token = bearer(await accessTokenFor(app, buyer.user));
      const feesBefore = await platformBalance(knex, 'fees', CURRENCY);
      // The API's clock is inside the inspection period (a dispute is allowed); the job's is past it.
      const job = instanceAt(new Date(clock.getTime() + THREE_DAYS_MS + 1));
      const sharedKey = crypto.randomUUID();
      const accept = (index: number) =>
        request(app)
          .post(`/api/escrows/${id}/accept`)
          .set(token)
          .set('Idempotency-Key', index < 5 ? sharedKey : crypto.randomUUID());
      const [jobReleased, dispute, ...accepts] = await Promise.all([
        job.releaseDue({ batchSize: 100 }),
        request(app).post(`/api/escrows/${id}/dispute`).set(token).send({ reason: 'Scratched' }),
        ...Array.from({ length: 20 }, (_, index) => accept(index)),
      ]);
      const status = await statusOf(id);
      const acceptedByBuyer = accepts.filter((res) => res.status === 200).length;
      const history = (await knex('events').where({ subject_type: 'escrow', subject_id: id }).orderBy('sequence')) as Array<{ type: string; actor_user_id: string | null }>;
      const releasedByJob = history.some((event) => event.type === 'escrow.released' && event.actor_user_id === null);
      const context = { race, status, acceptedByBuyer, releasedByJob, dispute: dispute.status, jobReleased };

      expect(['released', 'disputed'], JSON.stringify(context)).toContain(status);
      if (status === 'released') {
        expect(acceptedByBuyer + (releasedByJob ? 1 : 0), JSON.stringify(context)).toBe(1);
        expect(dispute.status).toBe(409);
        expect(dispute.body.error).toBe('InvalidEscrowState');
        expect(await walletBalance(seller.user.id, CURRENCY)).toBe(AMOUNT);
        expect(await platformBalance(knex, 'fees', CURRENCY)).toBe(feesBefore + 5_000n);
        expect(history.filter((event) => event.type === 'escrow.released')).toHaveLength(1);
        outcomes.add(releasedByJob ? 'job' : 'accept');
      } else {
        expect(acceptedByBuyer, JSON.stringify(context)).toBe(0);
        expect(releasedByJob).toBe(false);
        expect(dispute.status).toBe(200);
        expect(await walletBalance(seller.user.id, CURRENCY)).toBe(0n);
        expect(await platformBalance(knex, 'fees', CURRENCY)).toBe(feesBefore);
        outcomes.add('dispute');
      }
      for (const res of accepts.filter((r) => r.status !== 200)) {
        expect(res.status, JSON.stringify(res.body)).toBe(409);
        expect(['InvalidEscrowState', 'ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed']).toContain(res.body.error);
      }
      expect(await settlementCount(id)).toBe(status === 'released' ? 1 : 0);
      await expectEscrowMoneyConsistent(knex, CURRENCY);
    }
    expect(outcomes.size).toBeGreaterThanOrEqual(1);
    await expectLedgerInvariants(knex);
  });

  it('a seller refund racing buyer accepts and the job: one settlement, to exactly one side', async () => {
    const { id, buyer, seller } = await delivered();
    const buyerToken = bearer(await accessTokenFor(app, buyer.user));
    const sellerToken = bearer(await accessTokenFor(app, seller.user));
    const job = instanceAt(new Date(clock.getTime() + THREE_DAYS_MS));
    const [, refund, ...accepts] = await Promise.all([
      job.releaseDue({ batchSize: 100 }),
      request(app).post(`/api/escrows/${id}/refund`).set(sellerToken).set('Idempotency-Key', crypto.randomUUID()),
      ...Array.from({ length: 10 }, () => request(app).post(`/api/escrows/${id}/accept`).set(buyerToken).set('Idempotency-Key', crypto.randomUUID()).send({})),
    ]);
    const status = await statusOf(id);
    expect(['released', 'refunded']).toContain(status);
    expect(await settlementCount(id)).toBe(1);
    if (status === 'refunded') {
      expect(refund.status).toBe(200);
      expect(accepts.every((res) => res.status === 409)).toBe(true);
      expect(await walletBalance(buyer.user.id, CURRENCY)).toBe(AMOUNT + 5_000n);
      expect(await walletBalance(seller.user.id, CURRENCY)).toBe(0n);
    } else {
      expect(refund.status).toBe(409);
      expect(accepts.filter((res) => res.status === 200).length).toBeLessThanOrEqual(1);
      expect(await walletBalance(seller.user.id, CURRENCY)).toBe(AMOUNT);
      expect(await walletBalance(buyer.user.id, CURRENCY)).toBe(0n);
    }
    await expectEscrowMoneyConsistent(knex, CURRENCY);
  });
});
