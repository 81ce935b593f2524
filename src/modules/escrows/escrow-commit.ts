import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { walletRefusal } from '../ledger';
import { applyPayoutDecision, type Decision, type RowChange } from '../writes';
import { heldRelease, type EscrowChange } from './escrow-payouts';
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
  const row: RowChange = { table: 'escrows', id: before.id, expect: { status: before.status }, set: toRow(changes), ...(posting ? { postingIds: { [posting.column]: 0 } } : {}) };
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
 * Writes `change` (one statement: write_apply). A release that pays the seller names the change
 * that holds it (heldRelease), which write_apply applies instead when the ledger refuses the
 * release for the seller's limits; `otherwise`, a change of the held payout's own for the same
 * case (the job's completion: tried again later; `recipientUserId` the held payout's). Any other
 * refusal of the ledger (a split ruling's share the buyer's limits refuse included) is thrown,
 * naming the parties.
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
  const { postingIds, held } = await applyPayoutDecision(trx, decided.decision).catch((error: unknown) => {
    throw posting ? walletRefusal(error, posting.parties) : error;
  });
  return escrowAfter(decided, postingIds, held);
}

/** A change decided in full: its decision (with the change that holds its release, if any), and the escrow after either. */
export interface DecidedEscrowChange {
  decision: Decision;
  change: EscrowChange;
  main: Decided;
  instead: Decided | undefined;
}

/**
 * The decision of `change` on the escrow read (nothing written): the release that pays the
 * seller names the change that holds it (heldRelease); `otherwise`, a change of the held
 * payout's own for the same case (the job's completion: tried again later).
 */
export async function decideEscrowChange(
  db: Knex | Knex.Transaction,
  locked: LockedEscrow,
  change: EscrowChange,
  actorUserId: string | null,
  now: Date,
  otherwise?: { retry: RowChange; recipientUserId: string },
): Promise<DecidedEscrowChange> {
  const main = await decide(db, locked, change, actorUserId, now);
  const holding = otherwise ? undefined : heldRelease(locked, change, crypto.randomUUID(), now);
  const instead = holding ? await decide(db, locked, holding, actorUserId, now) : otherwise ? { decision: { changes: [otherwise.retry], answer: main.decision.answer }, after: locked } : undefined;
  if (instead) main.decision.hold = { posting: 0, ownerId: otherwise?.recipientUserId ?? locked.escrow.sellerUserId, instead: instead.decision };
  return { decision: main.decision, change, main, instead };
}

/** The escrow after its decision was applied: held (write_apply applied `instead`), or with the id of the posting it made. */
export function escrowAfter(decided: DecidedEscrowChange, postingIds: readonly string[], held: boolean): EscrowWithHistory {
  const { main, instead, change } = decided;
  if (held && instead) return { escrow: instead.after.escrow, history: instead.after.history };
  const { escrow, history } = main.after;
  if (change.posting?.column === 'funding_posting_id') escrow.fundingPostingId = postingIds[0] ?? null;
  if (change.posting?.column === 'settlement_posting_id') escrow.settlementPostingId = postingIds[0] ?? null;
  return { escrow, history };
}
