import { NotFoundError, UnprocessableError, ValidationError } from '../../errors';
import { walletIdentity, type AccountIdentity } from '../ledger';
import type { Decision, PlannedPosting } from '../writes';
import type { ParsedIdentifier } from './recipient';
import type { PartiesFound, RecipientType, Transfer, TransferRail } from './transfers-repository';

/**
 * The decision of POST /transfers, in memory: from the request (parsed) and the parties as one
 * plain read found them, the transfer, its posting and the row to insert; or the refusal it
 * meets once its key is its own. Nothing money-critical is judged here: ledger_post, under its
 * locks inside write_apply, refuses a frozen wallet, short funds and a limit, and finds (or
 * creates) the accounts the posting names by identity.
 */

/** What POST /transfers asks for, checked in Node (a 400 never reaches the key). */
export interface TransferRequest {
  userId: string;
  currency: string;
  amountMinor: bigint;
  note: string | null;
  identifier: ParsedIdentifier;
  rail: TransferRail | null;
  /** Whether the identifier is a valid telephone number for its country (a phone without a rail may go to mobile money). */
  phoneValid: boolean;
}

/** The sender, and the platform user the identifier names (by e-mail, or by phone unless the rail is mobile money), as the parties' read found them. */
export type Parties = PartiesFound;

/** Whom the parties' read looks up for a request: its e-mail, or its phone (not for mobile money). */
export function recipientLookup(request: Pick<TransferRequest, 'identifier' | 'rail'>): { email: string | null; phone: string | null } {
  const { identifier, rail } = request;
  return {
    email: identifier.kind === 'email' ? identifier.value : null,
    phone: identifier.kind === 'phone' && rail !== 'mobile_money' ? identifier.value : null,
  };
}

export type TransferDecision = { transfer: Transfer; decision: Decision } | { refusal: Error };

/** The rail, the recipient's type and user (p2p), or the refusal. Refusals in this order: the recipient, then the sender. */
function routeOf(request: TransferRequest, parties: Parties): { rail: TransferRail; type: RecipientType; recipientUserId: string | null } | { refusal: Error } {
  const { identifier, rail } = request;
  const recipient = parties.recipient && parties.recipient.status !== 'disabled' ? parties.recipient : undefined;
  if (identifier.kind === 'iban') return { rail: 'bank', type: 'iban', recipientUserId: null };
  if (identifier.kind === 'phone' && rail === 'mobile_money') return { rail: 'mobile_money', type: 'msisdn', recipientUserId: null };
  if (recipient) {
    if (recipient.id === request.userId) return { refusal: new UnprocessableError('SelfTransfer', 'You cannot send money to yourself.') };
    return { rail: 'p2p', type: 'user', recipientUserId: recipient.id };
  }
  if (identifier.kind === 'phone' && rail === null) {
    if (!request.phoneValid) return { refusal: ValidationError.field('body.recipientIdentifier', 'recipientIdentifier is not a valid telephone number for its country.') };
    return { rail: 'mobile_money', type: 'msisdn', recipientUserId: null };
  }
  return { refusal: new NotFoundError('No platform user has this e-mail address or telephone number.', 'RecipientNotFound') };
}

/** The account a transfer credits: the recipient's wallet (p2p), or the rail's transit account. */
function creditedAccount(rail: TransferRail, recipientUserId: string | null, currency: string): AccountIdentity {
  if (recipientUserId !== null) return walletIdentity(recipientUserId, currency);
  return { ownerType: 'platform', ownerId: null, currency, kind: 'rail_transit', externalRef: rail };
}

/** The posting of a transfer: the sender's wallet to the recipient's wallet or the rail's transit account, both by identity. */
export function transferPosting(transfer: Pick<Transfer, 'id' | 'senderUserId' | 'rail' | 'currency' | 'amountMinor' | 'recipientUserId'>): PlannedPosting {
  return {
    kind: `transfer.${transfer.rail}`,
    reference: transfer.id,
    metadata: { transfer_id: transfer.id, sender_user_id: transfer.senderUserId, rail: transfer.rail },
    entries: [
      { account: walletIdentity(transfer.senderUserId, transfer.currency), amountMinor: -transfer.amountMinor },
      { account: creditedAccount(transfer.rail, transfer.recipientUserId, transfer.currency), amountMinor: transfer.amountMinor },
    ],
  };
}

/**
 * Decides a transfer: `id` and `now` are the new transfer's. A p2p transfer is completed at
 * once; a payout to a rail stays pending until the rail's outcome. The transfer's event is the
 * transfers table's own (transfers_record_event, on the row's insert), as for every change of
 * its status.
 */
export function decideTransfer(request: TransferRequest, parties: Parties, id: string, now: Date): TransferDecision {
  const route = routeOf(request, parties);
  if ('refusal' in route) return route;
  const { sender } = parties;
  if (!sender || sender.status === 'disabled') return { refusal: new NotFoundError('Your user account no longer exists.', 'NotFound') };
  if (sender.status === 'locked') return { refusal: new UnprocessableError('SenderLocked', 'Your account is locked: it cannot send money. Contact support.') };
  const transfer: Transfer = {
    id,
    senderUserId: request.userId,
    rail: route.rail,
    status: route.rail === 'p2p' ? 'completed' : 'pending',
    currency: request.currency,
    amountMinor: request.amountMinor,
    recipientType: route.type,
    recipientIdentifier: request.identifier.value,
    recipientUserId: route.recipientUserId,
    note: request.note,
    postingId: '',
    settlementPostingId: null,
    railReference: null,
    submittedAt: null,
    failureCode: null,
    failureReason: null,
    createdAt: now,
    updatedAt: now,
    settledAt: null,
  };
  const decision: Decision = {
    postings: [transferPosting(transfer)],
    changes: [
      {
        table: 'transfers',
        op: 'insert',
        id,
        set: {
          sender_user_id: transfer.senderUserId,
          rail: transfer.rail,
          status: transfer.status,
          currency: transfer.currency,
          amount_minor: transfer.amountMinor.toString(),
          recipient_type: transfer.recipientType,
          recipient_identifier: transfer.recipientIdentifier,
          recipient_user_id: transfer.recipientUserId,
          note: transfer.note,
          created_at: now.toISOString(),
          updated_at: now.toISOString(),
        },
        postingIds: { posting_id: 0 },
      },
    ],
    answer: { resource: { type: 'transfer', id, status: transfer.status, location: `/api/transfers/${id}` }, status: 200 },
  };
  return { transfer, decision };
}
