import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { IdempotencyService, requestHash } from '../../src/modules/idempotency';
import { fundWallet } from '../../src/modules/ledger';
import { TransferWindow, type TransferOutcome, type TransferSubmission } from '../../src/modules/transfers';
import { testKnex } from '../support/database';
import { createUser } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';

/**
 * A window of POST /transfers applied as the transfers module applies it: the parties read in
 * one statement, each transfer decided in memory, the window in one write_apply_batch; each
 * item its own outcome, in order.
 */
const knex = testKnex();
const idempotency = new IdempotencyService(knex, { ttlHours: 24 });
const window = new TransferWindow(knex, undefined, undefined);

function item(from: string, to: string, amount: bigint, key = crypto.randomUUID()): TransferSubmission {
  return {
    request: { userId: from, currency: 'XOF', amountMinor: amount, note: null, identifier: { kind: 'email', value: to }, rail: null, phoneValid: true },
    key: idempotency.pendingKey({ userId: from, operation: 'createTransfer', key, requestHash: requestHash({ body: { to, amount: amount.toString() } }) }, 200),
  };
}

/** The outcome as a code (null: a transfer made) and, for a transfer, its id. */
function codeOf(outcome: TransferOutcome): { code: string | null; id: string | null; details?: unknown } {
  if ('transfer' in outcome) return { code: null, id: outcome.transfer.id };
  const error = outcome.error as { code?: string; details?: unknown };
  return { code: error.code ?? String(error), id: null, details: error.details };
}

describe('a window of transfers', () => {
  it('gives each item its own outcome: a refusal fails no other item, and later items see earlier ones', async () => {
    const [alice, bob] = await Promise.all([createUser(), createUser()]);
    await withTransaction(knex, (trx) => fundWallet(trx, alice!.id, 'XOF', 1_000n));
    const outcomes = (
      await window.runWindow([
        item(alice!.id, bob!.email!, 600n),
        item(alice!.id, bob!.email!, 600n), // the first took the money
        item(alice!.id, 'nobody@test.example', 1n),
        item(alice!.id, alice!.email!, 1n),
        item(alice!.id, bob!.email!, 400n),
      ])
    ).map(codeOf);
    expect(outcomes.map(({ code }, index) => ({ n: index + 1, code }))).toEqual([
      { n: 1, code: null },
      { n: 2, code: 'InsufficientFunds' },
      { n: 3, code: 'RecipientNotFound' },
      { n: 4, code: 'SelfTransfer' },
      { n: 5, code: null },
    ]);
    expect(outcomes[1]!.details).toEqual({ currency: 'XOF', available: '400', required: '600' });
    await expectLedgerInvariants(knex);
  });

  it('one key twice in a window: the second is answered as already processed, with the first transfer', async () => {
    const [alice, bob] = await Promise.all([createUser(), createUser()]);
    await withTransaction(knex, (trx) => fundWallet(trx, alice!.id, 'XOF', 1_000n));
    const key = crypto.randomUUID();
    const outcomes = (await window.runWindow([item(alice!.id, bob!.email!, 100n, key), item(alice!.id, bob!.email!, 100n, key)])).map(codeOf);
    expect(outcomes[0]!.code).toBeNull();
    expect({ code: outcomes[1]!.code, resource: (outcomes[1]!.details as { resource_id?: string }).resource_id }).toEqual({
      code: 'IdempotencyKeyAlreadyProcessed',
      resource: outcomes[0]!.id,
    });
  });

  it('run again by the same request (a fault hid its commit), an item answers with its transfer; another request with the same key gets 409', async () => {
    const [alice, bob] = await Promise.all([createUser(), createUser()]);
    await withTransaction(knex, (trx) => fundWallet(trx, alice!.id, 'XOF', 1_000n));
    const request = item(alice!.id, bob!.email!, 100n);
    const [made] = (await window.runWindow([request])).map(codeOf);
    const again = codeOf(await window.runAlone(request));
    expect({ code: again.code, id: again.id }).toEqual({ code: null, id: made!.id });
    expect(request.key.completedWith?.resourceId).toBe(made!.id);
    const replay = codeOf(await window.runAlone({ ...request, key: idempotency.pendingKey({ userId: alice!.id, operation: 'createTransfer', key: request.key.scope.key, requestHash: request.key.requestHash }, 200) }));
    expect(replay.code).toBe('IdempotencyKeyAlreadyProcessed');
    expect(await knex('transfers').where({ sender_user_id: alice!.id }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
  });
});
