import { describe, expect, it } from 'vitest';
import { decideTransfer, recipientLookup, transferPosting, type Parties, type TransferRequest } from '../../src/modules/transfers';

const SENDER = '0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e';
const RECIPIENT = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
const ID = '2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a';
const NOW = new Date('2026-11-29T10:00:00.123Z');

const active = (id: string) => ({ id, status: 'active' });

function request(overrides: Partial<TransferRequest> = {}): TransferRequest {
  return { userId: SENDER, currency: 'XOF', amountMinor: 700n, note: 'rent', identifier: { kind: 'email', value: 'bob@test.example' }, rail: null, phoneValid: true, ...overrides };
}

function refusalOf(req: TransferRequest, parties: Parties): { code: string; category: string; message: string } | undefined {
  const decided = decideTransfer(req, parties, ID, NOW);
  if (!('refusal' in decided)) return undefined;
  const { code, category, message } = decided.refusal as unknown as { code: string; category: string; message: string };
  return { code, category, message };
}

describe('the decision of a transfer', () => {
  it('p2p to a platform user: completed at once, wallet to wallet by identity, the row inserted with its posting id', () => {
    const decided = decideTransfer(request(), { sender: active(SENDER), recipient: active(RECIPIENT) }, ID, NOW);
    if ('refusal' in decided) throw decided.refusal;
    expect(decided.transfer).toMatchObject({ id: ID, senderUserId: SENDER, rail: 'p2p', status: 'completed', recipientType: 'user', recipientUserId: RECIPIENT, recipientIdentifier: 'bob@test.example', amountMinor: 700n, note: 'rent', createdAt: NOW, updatedAt: NOW });
    // No posting id yet: the posting is made when the decision is applied, and its id is filled in then.
    expect(decided.transfer).toMatchObject({ postingId: '', settlementPostingId: null, railReference: null, submittedAt: null, settledAt: null });
    expect(decided.decision.postings).toEqual([
      {
        kind: 'transfer.p2p',
        reference: ID,
        metadata: { transfer_id: ID, sender_user_id: SENDER, rail: 'p2p' },
        entries: [
          { account: { ownerType: 'user', ownerId: SENDER, currency: 'XOF', kind: 'wallet' }, amountMinor: -700n },
          { account: { ownerType: 'user', ownerId: RECIPIENT, currency: 'XOF', kind: 'wallet' }, amountMinor: 700n },
        ],
      },
    ]);
    expect(decided.decision.changes).toEqual([
      {
        table: 'transfers',
        op: 'insert',
        id: ID,
        set: {
          sender_user_id: SENDER,
          rail: 'p2p',
          status: 'completed',
          currency: 'XOF',
          amount_minor: '700',
          recipient_type: 'user',
          recipient_identifier: 'bob@test.example',
          recipient_user_id: RECIPIENT,
          note: 'rent',
          created_at: '2026-11-29T10:00:00.123Z',
          updated_at: '2026-11-29T10:00:00.123Z',
        },
        postingIds: { posting_id: 0 },
      },
    ]);
    expect(decided.decision.events).toBeUndefined();
    expect(decided.decision.answer).toEqual({ resource: { type: 'transfer', id: ID, status: 'completed', location: `/api/transfers/${ID}` }, status: 200 });
  });

  it('a bank or mobile-money payout stays pending and credits the rail’s transit account', () => {
    const bank = decideTransfer(request({ identifier: { kind: 'iban', value: 'FR7630006000011234567890189' } }), { sender: active(SENDER), recipient: undefined }, ID, NOW);
    const mobile = decideTransfer(request({ identifier: { kind: 'phone', value: '+2250700009999' }, rail: 'mobile_money' }), { sender: active(SENDER), recipient: active(RECIPIENT) }, ID, NOW);
    const byPhone = decideTransfer(request({ identifier: { kind: 'phone', value: '+2250700009999' } }), { sender: active(SENDER), recipient: undefined }, ID, NOW);
    for (const [decided, rail, type] of [[bank, 'bank', 'iban'], [mobile, 'mobile_money', 'msisdn'], [byPhone, 'mobile_money', 'msisdn']] as const) {
      if ('refusal' in decided) throw decided.refusal;
      expect({ rail: decided.transfer.rail, status: decided.transfer.status, type: decided.transfer.recipientType, user: decided.transfer.recipientUserId }).toEqual({ rail, status: 'pending', type, user: null });
      expect(decided.decision.postings?.[0]?.kind).toBe(`transfer.${rail}`);
      expect(decided.decision.postings?.[0]?.entries[1]?.account).toEqual({ ownerType: 'platform', ownerId: null, currency: 'XOF', kind: 'rail_transit', externalRef: rail });
      expect(decided.decision.answer.resource.status).toBe('pending');
    }
  });

  it('refuses, the recipient first, then the sender', () => {
    const sender = active(SENDER);
    expect(refusalOf(request(), { sender, recipient: undefined })).toEqual({ code: 'RecipientNotFound', category: 'not_found', message: 'No platform user has this e-mail address or telephone number.' });
    expect(refusalOf(request(), { sender, recipient: { id: RECIPIENT, status: 'disabled' } })?.code).toBe('RecipientNotFound');
    expect(refusalOf(request(), { sender, recipient: active(SENDER) })).toEqual({ code: 'SelfTransfer', category: 'unprocessable', message: 'You cannot send money to yourself.' });
    expect(refusalOf(request({ identifier: { kind: 'phone', value: '+2250000' }, phoneValid: false }), { sender, recipient: undefined })).toMatchObject({ code: 'ValidationError', category: 'invalid' });
    expect(refusalOf(request(), { sender: undefined, recipient: undefined })?.code).toBe('RecipientNotFound');
    expect(refusalOf(request(), { sender: undefined, recipient: active(RECIPIENT) })).toEqual({ code: 'NotFound', category: 'not_found', message: 'Your user account no longer exists.' });
    expect(refusalOf(request(), { sender: { id: SENDER, status: 'disabled' }, recipient: active(RECIPIENT) })?.code).toBe('NotFound');
    expect(refusalOf(request(), { sender: { id: SENDER, status: 'locked' }, recipient: active(RECIPIENT) })).toEqual({
      code: 'SenderLocked',
      category: 'unprocessable',
      message: 'Your account is locked: it cannot send money. Contact support.',
    });
    // A locked recipient still receives: locking stops a user acting, not being paid.
    expect(refusalOf(request(), { sender, recipient: { id: RECIPIENT, status: 'locked' } })).toBeUndefined();
    // A disabled platform user's phone, without a rail: a mobile-money payout to the number.
    const toNumber = decideTransfer(request({ identifier: { kind: 'phone', value: '+2250700009999' } }), { sender, recipient: { id: RECIPIENT, status: 'disabled' } }, ID, NOW);
    expect('transfer' in toNumber && toNumber.transfer.rail).toBe('mobile_money');
  });

  it('a phone sent on the p2p rail that names no platform user is not found (only a phone without a rail falls back to mobile money); a bad number says which field', () => {
    const sender = active(SENDER);
    expect(refusalOf(request({ identifier: { kind: 'phone', value: '+2250700009999' }, rail: 'p2p' }), { sender, recipient: undefined })?.code).toBe('RecipientNotFound');
    const invalid = decideTransfer(request({ identifier: { kind: 'phone', value: '+2250000' }, phoneValid: false }), { sender, recipient: undefined }, ID, NOW);
    expect('refusal' in invalid && invalid.refusal).toMatchObject({
      message: 'recipientIdentifier is not a valid telephone number for its country.',
      details: [{ field: 'body.recipientIdentifier', message: 'recipientIdentifier is not a valid telephone number for its country.' }],
    });
    // A valid number of a platform user on no rail is that user's p2p transfer.
    const toUser = decideTransfer(request({ identifier: { kind: 'phone', value: '+2250700009999' } }), { sender, recipient: active(RECIPIENT) }, ID, NOW);
    expect('transfer' in toUser && [toUser.transfer.rail, toUser.transfer.recipientUserId]).toEqual(['p2p', RECIPIENT]);
  });

  it('looks the recipient up by e-mail, or by phone unless the rail is mobile money', () => {
    expect(recipientLookup(request())).toEqual({ email: 'bob@test.example', phone: null });
    expect(recipientLookup(request({ identifier: { kind: 'phone', value: '+2250700009999' } }))).toEqual({ email: null, phone: '+2250700009999' });
    expect(recipientLookup(request({ identifier: { kind: 'phone', value: '+2250700009999' }, rail: 'p2p' }))).toEqual({ email: null, phone: '+2250700009999' });
    expect(recipientLookup(request({ identifier: { kind: 'phone', value: '+2250700009999' }, rail: 'mobile_money' }))).toEqual({ email: null, phone: null });
    expect(recipientLookup(request({ identifier: { kind: 'iban', value: 'FR7630006000011234567890189' } }))).toEqual({ email: null, phone: null });
  });

  it('the posting moves the amount out of the sender’s wallet and into the credited account, summing to zero', () => {
    const posting = transferPosting({ id: ID, senderUserId: SENDER, rail: 'bank', currency: 'EUR', amountMinor: 12_345n, recipientUserId: null });
    expect(posting.entries.map((entry) => entry.amountMinor)).toEqual([-12_345n, 12_345n]);
    expect(posting.entries[0]?.account).toEqual({ ownerType: 'user', ownerId: SENDER, currency: 'EUR', kind: 'wallet' });
  });
});
