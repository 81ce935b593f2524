import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKnex } from '../../src/db/database';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet } from '../../src/modules/ledger';
import { IdempotencyService } from '../../src/modules/idempotency';
import { TransferService, type RailAdapter } from '../../src/modules/transfers';
import { databaseKind, testDatabaseUrl, testKnex } from '../support/database';
import { transferClaim } from '../support/idempotency';
import { until } from '../support/jobs';

/**
 * Instances restarted together must not each hand the same pending transfers to the rail
 * (one lease per transfer). Several instances (each its own pool on one database, on
 * PostgreSQL) sweep at once and the rail is called once per transfer. On PostgreSQL the
 * instances sweep the file's own database, so only this file's transfers reach this test's
 * rail; on the embedded back-end (one connection, files one after another) they share the
 * run's pool.
 */
const TRANSFERS = 60;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A rail that records every hand-over and never reports an outcome (a slow one: each takes a few ms). */
class RecordingRail implements RailAdapter {
  readonly rails = ['bank', 'mobile_money'] as const;
  constructor(
    private readonly calls: string[],
    private readonly submitMs = 3,
  ) {}
  onOutcome(): void {}
  async submit(request: { transferId: string }): Promise<{ railReference: string }> {
    this.calls.push(request.transferId);
    await sleep(this.submitMs);
    return { railReference: `recorded_${request.transferId}` };
  }
}

let setupKnex: Knex;
const instanceKnexes: Knex[] = [];
let closePools: (() => Promise<void>) | undefined;

beforeAll(async () => {
  if (databaseKind() === 'embedded') {
    setupKnex = testKnex();
    for (let i = 0; i < 3; i += 1) instanceKnexes.push(testKnex());
    return;
  }
  const url = await testDatabaseUrl();
  setupKnex = createKnex(url, 'postgres', 4);
  for (let i = 0; i < 3; i += 1) instanceKnexes.push(createKnex(url, 'postgres', 4));
  closePools = async () => {
    for (const knex of [setupKnex, ...instanceKnexes]) await knex.destroy();
  };
}, 120_000);

afterAll(async () => {
  await closePools?.();
});

function instance(knex: Knex, calls: string[], options: { submitMs?: number; railLeaseSeconds?: number } = {}): TransferService {
  return new TransferService({
    knex,
    idempotency: new IdempotencyService(knex, { ttlHours: 24 }),
    rail: new RecordingRail(calls, options.submitMs),
    railLeaseSeconds: options.railLeaseSeconds,
  });
}

/** Pending rail transfers of a new sender whose hand-over leases have ended (their instance died). */
async function abandonedTransfers(count: number, offset: number): Promise<Set<string>> {
  const sender = await fundedSender();
  const creator = instance(setupKnex, []);
  const mine = new Set<string>();
  for (let i = 0; i < count; i += 1) {
    const transfer = await creator.create({ userId: sender }, transferClaim(crypto.randomUUID(), { amount: 100, currency: 'XOF', recipientIdentifier: phone(offset + i), rail: 'mobile_money' }), { amount: 100, currency: 'XOF', recipientIdentifier: phone(offset + i), rail: 'mobile_money' });
    mine.add(transfer.id);
  }
  await creator.whenDispatched();
  await setupKnex('transfers').whereIn('id', [...mine]).update({ rail_lease_until: setupKnex.raw("now() - interval '1 second'"), rail_reference: null });
  return mine;
}

async function fundedSender(): Promise<string> {
  const [user] = (await setupKnex('users')
    .insert({ email: `sweep-${crypto.randomUUID()}@test.example`, password_hash: 'not-a-hash', is_admin: false, status: 'active' })
    .returning('id')) as Array<{ id: string }>;
  const id = (user as { id: string }).id;
  await withTransaction(setupKnex, (trx) => fundWallet(trx, id, 'XOF', 10_000_000n));
  return id;
}

function phone(i: number): string {
  return `+22507${String(10_000_000 + i).slice(-8)}`;
}

/** Each id of `mine` handed over exactly once in `calls`. */
function expectEachOnce(calls: string[], mine: Set<string>): void {
  const counts = new Map<string, number>();
  for (const id of calls) if (mine.has(id)) counts.set(id, (counts.get(id) ?? 0) + 1);
  expect([...mine].filter((id) => counts.get(id) !== 1)).toEqual([]);
}

describe('pending rail transfers swept by several instances at once', () => {
  it('hands each transfer to the rail once, and each instance counts only what it handed over', { timeout: 120_000 }, async () => {
    const sender = await fundedSender();
    const creating: string[] = [];
    const creator = instance(setupKnex, creating);
    const mine = new Set<string>();
    for (let i = 0; i < TRANSFERS; i += 1) {
      const transfer = await creator.create({ userId: sender }, transferClaim(crypto.randomUUID(), { amount: 100, currency: 'XOF', recipientIdentifier: phone(i), rail: 'mobile_money' }), { amount: 100, currency: 'XOF', recipientIdentifier: phone(i), rail: 'mobile_money' });
      expect(transfer.status).toBe('pending');
      mine.add(transfer.id);
    }
    await creator.whenDispatched();
    expectEachOnce(creating, mine);
    // The instance that handed them over died a while ago: their hand-over leases have ended.
    await setupKnex('transfers').whereIn('id', [...mine]).update({ rail_lease_until: setupKnex.raw("now() - interval '1 second'") });

    const calls: string[] = [];
    const instances = instanceKnexes.map((knex) => instance(knex, calls));
    const counts = await Promise.all(instances.map((service) => service.resumePending()));
    expectEachOnce(calls, mine);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(calls.length);
    if (databaseKind() === 'postgres') expect(calls).toHaveLength(TRANSFERS);

    // Swept again at once: every lease still runs, nobody hands anything over.
    const again: string[] = [];
    const second = await Promise.all(instanceKnexes.map((knex) => instance(knex, again).resumePending()));
    expect(again.filter((id) => mine.has(id))).toEqual([]);
    expect(second.reduce((a, b) => a + b, 0)).toBe(again.length);
  });

  it('a transfer created while other instances sweep is handed over once, by whichever instance claims it first', { timeout: 120_000 }, async () => {
    const sender = await fundedSender();
    const calls: string[] = [];
    const [first, ...others] = instanceKnexes.map((knex) => instance(knex, calls));
    const mine = new Set<string>();
    let stop = false;
    const passes = others.map(() => 0);
    const sweeping = others.map(async (service, n) => {
      let handed = 0;
      while (!stop) {
        handed += await service.resumePending();
        passes[n] = (passes[n] as number) + 1;
        await sleep(1);
      }
      return handed;
    });
    for (let i = 0; i < 20; i += 1) {
      const transfer = await (first as TransferService).create({ userId: sender }, transferClaim(crypto.randomUUID(), { amount: 50, currency: 'XOF', recipientIdentifier: phone(1000 + i), rail: 'mobile_money' }), { amount: 50, currency: 'XOF', recipientIdentifier: phone(1000 + i), rail: 'mobile_money' });
      mine.add(transfer.id);
    }
    await (first as TransferService).whenDispatched();
    // Every sweeper passes at least twice more over the table after the last transfer exists.
    const after = [...passes];
    await until(() => passes.every((count, n) => count >= (after[n] as number) + 2));
    stop = true;
    await Promise.all(sweeping);
    expectEachOnce(calls, mine);
  });

  it('a slow rail: a sweep claims each transfer just before handing it over, so no lease ends under its queue', { timeout: 120_000 }, async () => {
    const mine = await abandonedTransfers(8, 2000);
    const calls: string[] = [];
    // Each hand-over takes 300 ms against a 1 s lease: a sweep that claimed all 8 at once
    // would still be handing over when its leases end and the second sweep starts.
    const [first, second] = instanceKnexes.map((knex) => instance(knex, calls, { submitMs: 300, railLeaseSeconds: 1 }));
    // The second sweep starts once the first one's 1 s leases have ended (a lease is measured on the real clock).
    const sweeps = [(first as TransferService).resumePending(), sleep(1_300).then(() => (second as TransferService).resumePending())];
    const counts = await Promise.all(sweeps);
    expectEachOnce(calls, mine);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(calls.filter((id) => mine.has(id)).length);
  });

  it('a transfer its rail accepted waits for the outcome: it is not handed over again when the hand-over lease ends', { timeout: 120_000 }, async () => {
    const mine = await abandonedTransfers(3, 3000);
    const calls: string[] = [];
    const sweeper = instance(instanceKnexes[0] as Knex, calls, { railLeaseSeconds: 1 });
    await sweeper.resumePending();
    expectEachOnce(calls, mine);
    // Past the 1 s hand-over lease, on the real clock the lease is measured on.
    await sleep(1_300);
    const later: string[] = [];
    await instance(instanceKnexes[1] as Knex, later, { railLeaseSeconds: 1 }).resumePending();
    expect(later.filter((id) => mine.has(id))).toEqual([]);
  });
});
