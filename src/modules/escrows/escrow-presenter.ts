import type { Caller, components, IdempotentResource } from '../../contract';
import type { Knex } from 'knex';
import { EventRepository, type HistoryEntry } from '../events';
import { currencies, minorToNumber } from '../ledger';
import { HELD_PAYOUT_REASON, payoutState } from '../held-payouts';
import { allowedActions, capacitiesOf } from './escrow-lifecycle';
import type { Escrow } from './escrow-repository';

type Db = Knex | Knex.Transaction;

/** Nobody in particular: the view an event carries (role `administrator`, no allowed actions). */
export const EVENT_READER: Pick<Caller, 'userId' | 'isAdmin'> = { userId: '00000000-0000-0000-0000-000000000000', isAdmin: false };

/** The API representation of an escrow for one caller: the contract's `Escrow`, generated. */
export type EscrowView = components['schemas']['Escrow'];

/** The escrow a request produced or changed, as an Idempotency-Key replay names it. */
export function escrowResource(escrow: Pick<EscrowView, 'id' | 'status'>): IdempotentResource {
  return { type: 'escrow', id: escrow.id, status: escrow.status, location: `/api/escrows/${escrow.id}` };
}

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

function actorRole(escrow: Escrow, event: HistoryEntry): EscrowView['history'][number]['actor_role'] {
  if (event.actorUserId === null) return 'platform';
  if (event.actorUserId === escrow.buyerUserId) return 'buyer';
  if (event.actorUserId === escrow.sellerUserId) return 'seller';
  return 'administrator';
}

/** Escrows as `reader` (a caller: who they are to each escrow, whether they administer the platform) sees them at `now`, each with its history (one query for all histories). */
export async function presentEscrows(db: Db, escrows: Escrow[], reader: Pick<Caller, 'userId' | 'isAdmin'>, now: Date): Promise<EscrowView[]> {
  const histories = await new EventRepository(db).historyOf('escrow', escrows.map((e) => e.id));
  const views: EscrowView[] = [];
  for (const escrow of escrows) views.push(await presentEscrow(db, escrow, histories.get(escrow.id) ?? [], reader, now));
  return views;
}

/** One escrow as `reader` sees it at `now`, with the history given (no statement but the currency's, cached). */
export async function presentEscrow(db: Db, escrow: Escrow, history: readonly HistoryEntry[], reader: Pick<Caller, 'userId' | 'isAdmin'>, now: Date): Promise<EscrowView> {
  const { exponent } = await currencies.require(db, escrow.currency);
  const capacities = capacitiesOf(escrow, reader);
  const role = capacities.has('buyer') ? 'buyer' : capacities.has('seller') ? 'seller' : 'administrator';
  return {
    id: escrow.id,
    status: escrow.status,
    role,
    buyer: { user_id: escrow.buyerUserId, identifier: escrow.buyerIdentifier },
    seller: { user_id: escrow.sellerUserId, identifier: escrow.sellerIdentifier },
    amount: minorToNumber(escrow.amountMinor, exponent),
    amount_minor: escrow.amountMinor.toString(),
    currency: escrow.currency,
    description: escrow.description,
    reference: escrow.reference,
    inspection_period_seconds: escrow.inspectionPeriodSeconds,
    fee: {
      rate_bps: escrow.feeBps,
      payer: escrow.feePayer,
      amount: minorToNumber(escrow.feeMinor, exponent),
      amount_minor: escrow.feeMinor.toString(),
      minimum_minor: escrow.feeMinimumMinor.toString(),
      buyer_share_minor: escrow.buyerFeeMinor.toString(),
      seller_share_minor: escrow.sellerFeeMinor.toString(),
    },
    allowed_actions: allowedActions(escrow, capacities, now),
    tracking_reference: escrow.trackingReference,
    delivery_note: escrow.deliveryNote,
    dispute_reason: escrow.disputeReason,
    resolution: escrow.resolutionOutcome
      ? {
          outcome: escrow.resolutionOutcome,
          seller_amount_minor: escrow.resolutionSellerAmountMinor?.toString() ?? null,
          note: escrow.resolutionNote,
          resolved_by_user_id: escrow.resolvedByUserId,
        }
      : null,
    settlement:
      escrow.settledToSellerMinor !== null && escrow.settledToBuyerMinor !== null && escrow.settledFeeMinor !== null
        ? {
            to_seller_minor: escrow.settledToSellerMinor.toString(),
            to_buyer_minor: escrow.settledToBuyerMinor.toString(),
            fee_minor: escrow.settledFeeMinor.toString(),
          }
        : null,
    ...(escrow.payoutId && escrow.payoutStatus && escrow.payoutHeldAt
      ? {
          payout: {
            ...payoutState({ id: escrow.payoutId, status: escrow.payoutStatus, reason: HELD_PAYOUT_REASON, heldAt: escrow.payoutHeldAt, settledAt: escrow.payoutSettledAt }),
            recipient: escrow.payoutRecipient ?? 'seller',
          },
        }
      : {}),
    funded_at: iso(escrow.fundedAt),
    delivered_at: iso(escrow.deliveredAt),
    inspection_ends_at: iso(escrow.inspectionEndsAt),
    accepted_at: iso(escrow.acceptedAt),
    disputed_at: iso(escrow.disputedAt),
    resolved_at: iso(escrow.resolvedAt),
    released_at: iso(escrow.releasedAt),
    refunded_at: iso(escrow.refundedAt),
    canceled_at: iso(escrow.canceledAt),
    created_at: escrow.createdAt.toISOString(),
    updated_at: escrow.updatedAt.toISOString(),
    history: history.map((event) => ({
      type: event.type,
      actor_role: actorRole(escrow, event),
      actor_user_id: event.actorUserId,
      occurred_at: event.occurredAt.toISOString(),
    })),
  };
}
