import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { CALLBACK_TOLERANCE_SECONDS, creditPosting, railClearingIdentity, reversalCode, topUpPostingPlan, topUpSettlement as settlement, verifyCallback, type TopUp } from '../../src/modules/top-ups';

const SECRET = `whsec_${crypto.randomBytes(32).toString('base64')}`;
const NOW = Date.UTC(2026, 10, 28, 9, 0, 0);

function signed(body: string, options: { id?: string; at?: number; secret?: string } = {}) {
  const id = options.id ?? 'msg_1';
  const at = options.at ?? NOW;
  return { id, timestamp: String(Math.floor(at / 1000)), signature: new Webhook(options.secret ?? SECRET).sign(id, new Date(at), body) };
}

describe('verifyCallback (Standard Webhooks over the raw body)', () => {
  const body = '{"provider_reference":"r-1","status":"succeeded"}';

  it('answers the webhook-id of a callback signed with the secret, verified by an independent signer', () => {
    expect(verifyCallback(SECRET, signed(body, { id: 'msg_42' }), body, NOW)).toBe('msg_42');
  });

  it('accepts any of several signatures (a secret rotation), ignoring other schemes', () => {
    const good = signed(body);
    const other = signed(body, { secret: `whsec_${crypto.randomBytes(32).toString('base64')}` });
    expect(verifyCallback(SECRET, { ...good, signature: `v1a,abc ${other.signature} ${good.signature}` }, body, NOW)).toBe('msg_1');
  });

  it('refuses another secret, another body, another id or timestamp, and missing headers: 401 InvalidSignature', () => {
    const good = signed(body);
    const refusals = [
      () => verifyCallback(SECRET, signed(body, { secret: `whsec_${crypto.randomBytes(32).toString('base64')}` }), body, NOW),
      () => verifyCallback(SECRET, good, body.replace('succeeded', 'failed'), NOW),
      () => verifyCallback(SECRET, { ...good, id: 'msg_2' }, body, NOW),
      () => verifyCallback(SECRET, { ...good, timestamp: String(Number(good.timestamp) + 1) }, body, NOW),
      () => verifyCallback(SECRET, { ...good, signature: good.signature.replace('v1,', 'v2,') }, body, NOW),
      () => verifyCallback(SECRET, { ...good, signature: undefined }, body, NOW),
      () => verifyCallback(SECRET, { ...good, id: undefined }, body, NOW),
      () => verifyCallback(SECRET, { ...good, timestamp: '12e3' }, body, NOW),
    ];
    for (const refuse of refusals) {
      expect(refuse).toThrow(
        expect.objectContaining({ code: 'InvalidSignature', category: 'unauthenticated', message: 'The webhook-signature header is missing or does not match the body signed with the rail secret.' }),
      );
    }
  });

  it('reads the timestamp as digits only: a sign, a space or a fraction around the signed number is refused', () => {
    const good = signed(body);
    for (const timestamp of [`+${good.timestamp}`, ` ${good.timestamp}`, `${good.timestamp} `, `${good.timestamp}.0`, `-${good.timestamp}`]) {
      // Number() reads each as the signed timestamp: only the header's own form refuses them.
      expect(() => verifyCallback(SECRET, { ...good, timestamp }, body, NOW), timestamp).toThrow(expect.objectContaining({ code: 'InvalidSignature' }));
    }
  });

  it(`accepts a timestamp ${CALLBACK_TOLERANCE_SECONDS} seconds away either way, refuses one second more`, () => {
    for (const offset of [-CALLBACK_TOLERANCE_SECONDS, CALLBACK_TOLERANCE_SECONDS]) expect(verifyCallback(SECRET, signed(body, { at: NOW + offset * 1000 }), body, NOW)).toBe('msg_1');
    for (const offset of [-(CALLBACK_TOLERANCE_SECONDS + 1), CALLBACK_TOLERANCE_SECONDS + 1]) {
      expect(() => verifyCallback(SECRET, signed(body, { at: NOW + offset * 1000 }), body, NOW)).toThrow(
        expect.objectContaining({ code: 'CallbackTimestampOutOfTolerance', category: 'unauthenticated', message: 'The webhook-timestamp is more than 300 seconds from now: the callback is refused.' }),
      );
    }
  });

  it('checks the signature before the clock: an unsigned old callback learns nothing of the tolerance', () => {
    const old = signed(body, { at: NOW - 3_600_000 });
    expect(() => verifyCallback(SECRET, { ...old, signature: 'v1,AAAA' }, body, NOW)).toThrow(expect.objectContaining({ code: 'InvalidSignature' }));
  });
});

const pending: TopUp = {
  id: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  userId: '7d9f2c4e-1b3a-4c5d-8e6f-0a1b2c3d4e5f',
  walletId: '5f6a7b8c-9d0e-4f1a-8b2c-3d4e5f6a7b8c',
  currency: 'XOF',
  amountMinor: 25_000n,
  method: 'mobile_money',
  provider: 'mtn_momo',
  msisdn: '+2250700009999',
  status: 'pending',
  providerReference: 'ref-1',
  failureCode: null,
  postingId: null,
  settledAt: null,
  createdAt: new Date(NOW),
  updatedAt: new Date(NOW),
};

describe('the top-up posting plan and settlement', () => {
  it('credits the wallet (by id) the whole amount from the provider clearing account, balanced', () => {
    const posting = creditPosting(pending);
    expect(posting).toMatchObject({ kind: 'top_up.credit', reference: pending.id });
    expect(posting.metadata).toEqual({ top_up_id: pending.id, provider: 'mtn_momo', provider_reference: 'ref-1' });
    expect(posting.allowFrozen).toBeUndefined();
    expect(posting.entries).toEqual([
      { account: { ownerType: 'platform', ownerId: null, currency: 'XOF', kind: 'external_clearing', externalRef: 'mobile_money.mtn_momo' }, amountMinor: -25_000n },
      { account: { id: pending.walletId }, amountMinor: 25_000n },
    ]);
    expect(posting.entries.reduce((sum, entry) => sum + entry.amountMinor, 0n)).toBe(0n);
    expect(railClearingIdentity('wave', 'EUR').externalRef).toBe('mobile_money.wave');
  });

  it('posts only when a pending top-up succeeds', () => {
    expect(topUpPostingPlan(pending, 'succeeded')).toHaveLength(1);
    expect(topUpPostingPlan(pending, 'failed')).toEqual([]);
    expect(topUpPostingPlan({ ...pending, status: 'succeeded' }, 'succeeded')).toEqual([]);
  });

  it('names a reversal after the ledger refusal, in snake case', () => {
    expect(reversalCode('AccountFrozen')).toBe('account_frozen');
    expect(reversalCode('LimitExceeded')).toBe('limit_exceeded');
  });

  it('decides each outcome: its status, failure code, posting id column, guarded update and one event', () => {
    const at = new Date(NOW + 60_000);
    const present = (topUp: TopUp) => ({ id: topUp.id, status: topUp.status });
    const succeeded = settlement(pending, { status: 'succeeded' }, at, present);
    expect(succeeded.after).toMatchObject({ status: 'succeeded', failureCode: null, settledAt: at });
    expect(succeeded.decision.postings).toHaveLength(1);
    expect(succeeded.decision.changes).toEqual([
      { table: 'top_ups', id: pending.id, expect: { status: 'pending' }, set: { status: 'succeeded', failure_code: null, settled_at: at.toISOString(), updated_at: at.toISOString() }, postingIds: { posting_id: 0 } },
    ]);
    expect(succeeded.decision.events?.map((event) => [event.type, event.previousStatus, event.object])).toEqual([['top_up.succeeded', 'pending', { id: pending.id, status: 'succeeded' }]]);
    expect(succeeded.decision.answer).toEqual({ resource: { type: 'top_up', id: pending.id, status: 'succeeded', location: `/api/wallets/${pending.walletId}/top-ups/${pending.id}` } });

    const failed = settlement(pending, { status: 'failed', failureCode: 'declined' }, at, present);
    expect(failed.after).toMatchObject({ status: 'failed', failureCode: 'declined' });
    expect(failed.decision.postings).toEqual([]);
    expect(failed.decision.changes?.[0]?.postingIds).toBeUndefined();
    expect(failed.decision.events?.[0]?.type).toBe('top_up.failed');

    const reversed = settlement(pending, { status: 'reversed', refusal: 'AccountFrozen' }, at, present);
    expect(reversed.after).toMatchObject({ status: 'reversed', failureCode: 'account_frozen' });
    expect(reversed.decision.postings).toEqual([]);
    expect(reversed.decision.events?.[0]?.type).toBe('top_up.reversed');
    expect(reversed.decision.events?.[0]?.payload).toEqual({ amount_minor: '25000', currency: 'XOF', failure_code: 'account_frozen' });
  });

  it('refuses to settle a top-up that is no longer pending', () => {
    expect(() => settlement({ ...pending, status: 'failed' }, { status: 'succeeded' }, new Date(NOW), () => null)).toThrow(/not pending/);
  });
});
