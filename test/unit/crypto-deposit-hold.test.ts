import { describe, expect, it } from 'vitest';
import { creditedHeldDeposit, heldDeposit, isHeldCreditOf } from '../../src/modules/crypto';
// eslint-disable-next-line no-restricted-imports -- the pure rules the module's index does not export, tested on their own
import { depositCreditPosting } from '../../src/modules/crypto/crypto-deposit-lifecycle';
// eslint-disable-next-line no-restricted-imports -- the stored deposit's shape, which the index does not export
import type { Deposit } from '../../src/modules/crypto/crypto-deposit-presenter';
import { FIRST_ATTEMPT_AFTER_MS, type HeldPayout } from '../../src/modules/held-payouts';

const at = new Date('2026-11-30T10:00:00Z');
const later = new Date('2026-11-30T12:00:00Z');

const finalDeposit: Deposit = {
  id: '11111111-1111-4111-8111-111111111111',
  userId: '22222222-2222-4222-8222-222222222222',
  depositAddressId: '33333333-3333-4333-8333-333333333333',
  asset: 'USDC',
  network: 'base',
  address: '0xabc',
  txHash: '0xdef',
  outputIndex: 1,
  amountMinor: 1_000_000_000n,
  status: 'completed',
  confirmations: 12,
  confirmationsRequired: 12,
  creditPostingId: null,
  heldPayoutId: null,
  heldAt: null,
  failureReason: null,
  detectedAt: new Date('2026-11-30T09:00:00Z'),
  completedAt: at,
  reversedAt: null,
  failedAt: null,
  createdAt: new Date('2026-11-30T09:00:00Z'),
  updatedAt: at,
};

const HELD_ID = '44444444-4444-4444-8444-444444444444';

describe('a crypto deposit held for its owner\'s limits', () => {
  it('is held, not completed: the deposit names its held payout, which holds its whole amount for its owner, first tried a minute later', () => {
    const { deposit, heldPayout } = heldDeposit(finalDeposit, HELD_ID, at);
    expect(deposit).toEqual({ ...finalDeposit, status: 'held_for_verification', completedAt: null, heldPayoutId: HELD_ID, heldAt: at, updatedAt: at });
    expect(heldPayout).toEqual({
      table: 'held_payouts',
      op: 'insert',
      id: HELD_ID,
      set: {
        subject_type: 'crypto_deposit',
        subject_id: finalDeposit.id,
        cycle_number: null,
        recipient_user_id: finalDeposit.userId,
        currency: 'USDC',
        amount_minor: '1000000000',
        reason: 'recipient_limit',
        status: 'held_for_verification',
        held_at: at.toISOString(),
        next_attempt_at: new Date(at.getTime() + FIRST_ATTEMPT_AFTER_MS).toISOString(),
      },
    });
    expect(isHeldCreditOf(deposit, { id: HELD_ID, subjectId: finalDeposit.id })).toBe(true);
    expect(isHeldCreditOf(deposit, { id: finalDeposit.id, subjectId: finalDeposit.id })).toBe(false);
    expect(isHeldCreditOf(deposit, { id: HELD_ID, subjectId: HELD_ID })).toBe(false);
    expect(isHeldCreditOf({ ...deposit, status: 'completed' }, { id: HELD_ID, subjectId: finalDeposit.id })).toBe(false);
  });

  it('is credited by the job with the very posting a final deposit makes (so once), completed; while refused, tried again later', () => {
    const { deposit } = heldDeposit(finalDeposit, HELD_ID, at);
    const held = { id: HELD_ID, subjectType: 'crypto_deposit', subjectId: finalDeposit.id, attempts: 2 } as HeldPayout;
    const credit = creditedHeldDeposit(deposit, held, later);
    expect(credit.deposit).toEqual({ ...deposit, status: 'completed', completedAt: later, updatedAt: later });
    expect(credit.posting).toEqual(depositCreditPosting(finalDeposit));
    expect(credit.posting.reference).toBe(finalDeposit.id);
    expect(credit.heldPayout).toMatchObject({ table: 'held_payouts', id: HELD_ID, expect: { status: 'held_for_verification' }, set: { status: 'completed', settled_at: later.toISOString() }, postingIds: { posting_id: 0 } });
    expect(credit.retry).toEqual({
      table: 'held_payouts',
      id: HELD_ID,
      expect: { status: 'held_for_verification' },
      set: { attempts: 3, next_attempt_at: new Date(later.getTime() + FIRST_ATTEMPT_AFTER_MS * 8).toISOString() },
    });
  });
});
