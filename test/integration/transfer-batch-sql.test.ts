import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet } from '../../src/modules/ledger';
import { testKnex } from '../support/database';
import { createUser } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';

/**
 * transfer_create_batch, the group commit of POST /transfers, called as the transfers module
 * calls it (one JSON array of items): each item its own outcome, in order.
 */
const knex = testKnex();

interface Outcome {
  item: number;
  code: string | null;
  detail: string | null;
  id: string | null;
}

async function batch(items: object[]): Promise<Outcome[]> {
  const { rows } = await knex.raw<{ rows: Outcome[] }>('SELECT b.item, b.code, b.detail, (b.transfer).id FROM transfer_create_batch(?::jsonb) AS b ORDER BY b.item', [JSON.stringify(items)]);
  return rows;
}

function item(from: string, to: string, amount: bigint, overrides: object = {}) {
  return {
    session_id: null,
    user_id: from,
    operation: 'createTransfer',
    key: crypto.randomUUID(),
    request_hash: crypto.randomBytes(32).toString('hex'),
    lease_seconds: 60,
    ttl_hours: 24,
    currency: 'XOF',
    amount: amount.toString(),
    note: null,
    identifier_kind: 'email',
    identifier: to,
    rail: null,
    phone_valid: true,
    attempt: crypto.randomUUID(),
    ...overrides,
  };
}

describe('transfer_create_batch', () => {
  it('gives each item its own outcome: a refusal fails no other item, and later items see earlier ones', async () => {
    const [alice, bob] = await Promise.all([createUser(), createUser()]);
    await withTransaction(knex, (trx) => fundWallet(trx, alice!.id, 'XOF', 1_000n));
    const outcomes = await batch([
      item(alice!.id, bob!.email!, 600n),
      item(alice!.id, bob!.email!, 600n), // the first took the money
      item(alice!.id, 'nobody@test.example', 1n),
      item(alice!.id, alice!.email!, 1n),
      item(alice!.id, bob!.email!, 400n),
    ]);
    expect(outcomes.map(({ item: n, code }) => ({ n, code }))).toEqual([
      { n: 1, code: null },
      { n: 2, code: 'TRF12' },
      { n: 3, code: 'TRF06' },
      { n: 4, code: 'TRF07' },
      { n: 5, code: null },
    ]);
    expect(JSON.parse(outcomes[1]!.detail!)).toEqual({ available: '400', required: '600' });
    await expectLedgerInvariants(knex);
  });

  it('one key twice in a batch: the second is answered as already processed, with the first transfer', async () => {
    const [alice, bob] = await Promise.all([createUser(), createUser()]);
    await withTransaction(knex, (trx) => fundWallet(trx, alice!.id, 'XOF', 1_000n));
    const first = item(alice!.id, bob!.email!, 100n);
    const outcomes = await batch([first, { ...first, attempt: crypto.randomUUID() }]);
    expect(outcomes[0]!.code).toBeNull();
    expect({ code: outcomes[1]!.code, resource: JSON.parse(outcomes[1]!.detail!).resource_id }).toEqual({ code: 'TRF04', resource: outcomes[0]!.id });
  });

  it('run again by the same attempt (a fault hid its commit), an item answers with its transfer; another attempt with the same key gets 409', async () => {
    const [alice, bob] = await Promise.all([createUser(), createUser()]);
    await withTransaction(knex, (trx) => fundWallet(trx, alice!.id, 'XOF', 1_000n));
    const request = item(alice!.id, bob!.email!, 100n);
    const [made] = await batch([request]);
    const [again] = await batch([request]);
    expect({ code: again!.code, id: again!.id }).toEqual({ code: null, id: made!.id });
    const [replay] = await batch([{ ...request, attempt: crypto.randomUUID() }]);
    expect(replay!.code).toBe('TRF04');
    expect(await knex('transfers').where({ sender_user_id: alice!.id }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
  });
});
