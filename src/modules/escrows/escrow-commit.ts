import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { walletRefusal } from '../ledger';
import { applyPayoutDecision, type Decision, type PayoutHold, type RowChange } from '../writes';
import { heldBuyerShare, heldRelease, type EscrowChange } from './escrow-payouts';
import { EVENT_READER, escrowResource, presentEscrow } from './escrow-presenter';
import { toRow, type Escrow, type EscrowWithHistory, type LockedEscrow } from './escrow-repository';

/** A change decided: what it writes, and the escrow with its history after it. */
interface Decided {
  decision: Decision;
  after: EscrowWithHistory;
}

/**
 * The decision of `change` on the locked escrow: the row (while it still shows the status read),
 * its posting, its other rows, its one event carrying the escrow as the API returns it (to no
 * party in particular) and the status before: all known here, so no statement re-reads them.
 */
async function decide(db: Knex | Knex.Transaction, locked: LockedEscrow, change: EscrowChange, actorUserId: string | null, now: Date): Promise<Decided> {
  const before = locked.escrow;
  const changes = { ...change.changes, updatedAt: now };
  const escrow: Escrow = { ...before, ...changes };
  const history = [...locked.history, { type: change.type, actorUserId, occurredAt: now }];
  const posting = change.posting;
  const row: RowChange = { table: 'escrows', id: before.id, expect: { status: before.status }, set: toRow(changes), ...(posting?.column ? { postingIds: { [posting.column]: 0 } } : {}) };
  return {
    decision: {
      postings: posting ? [posting.plan] : [],
      // Its other rows first: the escrow names a held payout inserted there.
      changes: [...(change.rows ?? []), row],
      events: [
        {
          subjectType: 'escrow',
          subjectId: before.id,
          type: change.type,
          actorUserId,
          payload: change.payload,
          occurredAt: now,
          object: await presentEscrow(db, escrow, history, EVENT_READER, now),
          previousStatus: before.status,
        },
      ],
      answer: { resource: escrowResource(escrow) },
    },
    after: { escrow, history },
  };
}

/**
 * Writes `change` (one statement: write_apply). A settlement that pays a party names the
 * alternative that holds that party's payout (heldRelease for the seller, heldBuyerShare for the
 * buyer's share of a split), which write_apply applies instead when the ledger refuses the
 * settlement for that party's limits; `otherwise`, a change of the held payout's own for the
 * same case (the job's completion: tried again later; `recipientUserId` the held payout's). Any
 * other refusal of the ledger is thrown, naming the parties.
 */
export async function commitEscrowChange(
  trx: Knex.Transaction,
  locked: LockedEscrow,
  change: EscrowChange,
  actorUserId: string | null,
  now: Date,
  otherwise?: { retry: RowChange; recipientUserId: string },
): Promise<EscrowWithHistory> {
  const decided = await decideEscrowChange(trx, locked, change, actorUserId, now, otherwise);
  const posting = change.posting;
  const { postingIds, applied } = await applyPayoutDecision(trx, decided.decision).catch((error: unknown) => {
    throw posting ? walletRefusal(error, posting.parties) : error;
  });
  return escrowAfter(decided, applied, postingIds);
}

/** A change decided in full: its decision (with the alternatives that hold its payouts), and the escrow after each decision it may apply. */
export interface DecidedEscrowChange {
  decision: Decision;
  /** The change each decision of the tree applies, and the escrow after it. */
  outcomes: Map<Decision, { change: EscrowChange | undefined; after: EscrowWithHistory }>;
}

/**
 * The decision of `change` on the escrow read (nothing written), naming an alternative per
 * party its settlement pays: the seller's (heldRelease) or, `otherwise`, a change of the held
 * payout's own (the job's completion: tried again later); the buyer's share of a split
 * (heldBuyerShare), whose own posting names the seller's alternative in turn (both over their
 * caps: the whole settlement waits for the seller).
 */
export async function decideEscrowChange(
  db: Knex | Knex.Transaction,
  locked: LockedEscrow,
  change: EscrowChange,
  actorUserId: string | null,
  now: Date,
  otherwise?: { retry: RowChange; recipientUserId: string },
): Promise<DecidedEscrowChange> {
  const outcomes: DecidedEscrowChange['outcomes'] = new Map();
  const decideOne = async (one: EscrowChange): Promise<Decision> => {
    const decided = await decide(db, locked, one, actorUserId, now);
    outcomes.set(decided.decision, { change: one, after: decided.after });
    return decided.decision;
  };
  const main = await decideOne(change);
  // The seller's alternative, or on a completion the held payout's recipient's (tried again later).
  const sellerHold = otherwise ? undefined : heldRelease(locked, change, crypto.randomUUID(), now);
  const forRecipient: PayoutHold | undefined = otherwise
    ? { posting: 0, ownerId: otherwise.recipientUserId, instead: { changes: [otherwise.retry], answer: main.answer } }
    : sellerHold && { posting: 0, ownerId: locked.escrow.sellerUserId, instead: await decideOne(sellerHold) };
  if (otherwise && forRecipient) outcomes.set(forRecipient.instead, { change: undefined, after: locked });
  const buyerShare = otherwise?.recipientUserId === locked.escrow.buyerUserId ? undefined : heldBuyerShare(locked, change, crypto.randomUUID(), now);
  const forBuyer: PayoutHold | undefined = buyerShare && { posting: 0, ownerId: locked.escrow.buyerUserId, instead: await decideOne(buyerShare) };
  // The buyer's share held, the seller's payout is the one its posting makes: the seller's (or the held payout's) alternative applies to it too.
  if (forBuyer && forRecipient) forBuyer.instead.holds = [forRecipient];
  const holds = [forRecipient, forBuyer].filter((hold): hold is PayoutHold => hold !== undefined);
  if (holds.length > 0) main.holds = holds;
  return { decision: main, outcomes };
}

/** The escrow after `applied` (the decision, or the alternative write_apply applied in its place), with the id of the posting it made. */
export function escrowAfter(decided: DecidedEscrowChange, applied: Decision, postingIds: readonly string[]): EscrowWithHistory {
  const outcome = decided.outcomes.get(applied);
  if (!outcome) throw new Error('write_apply applied a decision the escrow change did not decide');
  const { escrow, history } = outcome.after;
  const column = outcome.change?.posting?.column;
  if (column === 'funding_posting_id') escrow.fundingPostingId = postingIds[0] ?? null;
  if (column === 'settlement_posting_id') escrow.settlementPostingId = postingIds[0] ?? null;
  return { escrow, history };
}
