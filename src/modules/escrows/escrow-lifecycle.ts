import type { Caller } from '../../contract';
import { defineLifecycle, type Transition } from '../../domain/lifecycle';
import { ConflictOfInterestError, EscrowRoleForbiddenError, InvalidEscrowStateError } from './escrow-errors';

/**
 * The escrow state machine, as one table run by the shared engine (src/domain/lifecycle.ts;
 * pure: no database, no clock of its own).
 *
 *   awaiting_funding --fund (buyer)--> funded --deliver (seller)--> delivered
 *   awaiting_funding --cancel (buyer or seller)--> canceled
 *   funded | delivered --accept (buyer)--> released
 *   delivered --inspection period over (platform)--> released
 *   funded | delivered (before the inspection period ends) --dispute (buyer)--> disputed
 *   funded | delivered | disputed --refund (seller)--> refunded
 *   disputed --resolve (administrator who is not a party)--> released | refunded
 *   funded | delivered | disputed --the release held for verification (platform)--> accepted
 *   accepted --the held payout completed (platform)--> released
 *   accepted --the held payout returned (administrator who is not a party)--> refunded
 *
 * accept, refund, resolve and the automatic release end in the status their one settlement
 * decides: `released` when it pays the seller or the fee, `refunded` when it only pays the
 * buyer back (the service passes what the settlement paid to `statusAfter`).
 *
 * `accepted` is a release in progress: one the seller's tier limits do not allow yet (the
 * ledger refused it), held for verification in the holding account until the job completes it
 * or an administrator returns it to the buyer; or a split ruling's share the buyer's limits do
 * not allow yet, the seller paid, until the share is paid to the buyer (completed or returned:
 * `released`; src/modules/held-payouts, escrow-payouts.ts). A release the limits allow happens
 * in the same transaction as the acceptance, never stored `accepted`.
 */

export const ESCROW_STATUSES = ['awaiting_funding', 'funded', 'delivered', 'accepted', 'disputed', 'released', 'refunded', 'canceled'] as const;
export type EscrowStatus = (typeof ESCROW_STATUSES)[number];

export const ESCROW_ACTIONS = ['fund', 'deliver', 'accept', 'dispute', 'refund', 'cancel', 'resolve'] as const;
export type EscrowAction = (typeof ESCROW_ACTIONS)[number];

/** What a caller is to one escrow; an administrator who is also a party is both. */
export type EscrowCapacity = 'buyer' | 'seller' | 'administrator';

/**
 * The caller's capacities in one escrow; empty when the caller may not even see it. The
 * service authorizes and the presenter lists `allowed_actions` from the same capacities.
 */
export function capacitiesOf(escrow: { buyerUserId: string; sellerUserId: string }, caller: Pick<Caller, 'userId' | 'isAdmin'>): Set<EscrowCapacity> {
  const capacities = new Set<EscrowCapacity>();
  if (escrow.buyerUserId === caller.userId) capacities.add('buyer');
  if (escrow.sellerUserId === caller.userId) capacities.add('seller');
  if (caller.isAdmin) capacities.add('administrator');
  return capacities;
}

/** Statuses in which the buyer's money sits in the holding account. */
export const HELD_STATUSES: readonly EscrowStatus[] = ['funded', 'delivered', 'accepted', 'disputed'];

/** The platform itself (the automatic release): never a capacity of a caller. */
type EscrowParty = EscrowCapacity | 'platform';

/** What a settlement paid: the status it ends in is decided by it. */
export interface SettlementOutcome {
  toSellerMinor: bigint;
  feeMinor: bigint;
}

/** A settlement that pays the seller or the platform's fee releases the escrow; one that only pays the buyer back refunds it. */
function settled(outcome: SettlementOutcome): EscrowStatus {
  return outcome.toSellerMinor > 0n || outcome.feeMinor > 0n ? 'released' : 'refunded';
}

/** What the rules read: the escrow, who the caller is to it, and the time. */
interface EscrowContext extends EscrowState {
  capacities: ReadonlySet<EscrowParty>;
  now: Date;
}

/** A dispute must come before the inspection period ends; after it the release is due. */
function inspectionOver(context: EscrowContext): boolean {
  return context.inspectionEndsAt !== null && context.now.getTime() >= context.inspectionEndsAt.getTime();
}

type EscrowGuard = 'inspection_over' | 'not_due';

const ESCROW_TRANSITIONS = {
  fund: { by: ['buyer'], from: ['awaiting_funding'], to: 'funded' },
  deliver: { by: ['seller'], from: ['funded'], to: 'delivered' },
  accept: { by: ['buyer'], from: ['funded', 'delivered'], to: settled },
  dispute: { by: ['buyer'], from: ['funded', 'delivered'], to: 'disputed', guard: (context) => (inspectionOver(context) ? 'inspection_over' : null) },
  refund: { by: ['seller'], from: ['funded', 'delivered', 'disputed'], to: settled },
  cancel: { by: ['buyer', 'seller'], from: ['awaiting_funding'], to: 'canceled' },
  // Nobody rules on their own escrow.
  resolve: { by: ['administrator'], notBy: ['buyer', 'seller'], from: ['disputed'], to: settled },
  // The automatic release, once the inspection period is over.
  release: { by: ['platform'], from: ['delivered'], to: settled, guard: (context) => (inspectionOver(context) ? null : 'not_due') },
  // A release the seller's limits refuse (or a split's share the buyer's): held for verification, in place of the settlement.
  hold_payout: { by: ['platform'], from: ['funded', 'delivered', 'disputed'], to: 'accepted' },
  complete_payout: { by: ['platform'], from: ['accepted'], to: settled },
  return_payout: { by: ['administrator'], notBy: ['buyer', 'seller'], from: ['accepted'], to: settled },
} satisfies Record<EscrowAction | PlatformAction, Transition<EscrowStatus, EscrowParty, EscrowContext, SettlementOutcome, EscrowGuard>>;

/** Actions of the platform or of administrators on a held payout, never listed in `allowed_actions`. */
type PlatformAction = 'release' | 'hold_payout' | 'complete_payout' | 'return_payout';

const ESCROW_LIFECYCLE = defineLifecycle<EscrowStatus, EscrowAction | PlatformAction, EscrowParty, EscrowContext, SettlementOutcome, EscrowGuard>({
  initial: 'awaiting_funding',
  transitions: ESCROW_TRANSITIONS,
  listed: ESCROW_ACTIONS,
  partiesOf: (context) => context.capacities,
  refuse: (refusal, action, context, allowed) => {
    if (refusal.reason === 'party') return new EscrowRoleForbiddenError(action, ESCROW_TRANSITIONS[action].by);
    if (refusal.reason === 'conflict') return new ConflictOfInterestError(action === 'return_payout' ? 'return the held payout of' : action);
    return new InvalidEscrowStateError(action, context.status, allowed());
  },
});

/** The part of an escrow the rules read. */
export interface EscrowState {
  status: EscrowStatus;
  inspectionEndsAt: Date | null;
}

const context = (state: EscrowState, capacities: ReadonlySet<EscrowParty>, now: Date): EscrowContext => ({ status: state.status, inspectionEndsAt: state.inspectionEndsAt, capacities, now });

/** The actions a caller with `capacities` may take now, in the table's order. */
export function allowedActions(state: EscrowState, capacities: ReadonlySet<EscrowCapacity>, now: Date): EscrowAction[] {
  return ESCROW_LIFECYCLE.allowedActions(context(state, capacities, now)) as EscrowAction[];
}

/**
 * Checks that a caller may take `action` now: 403 `InsufficientRole` when none of the
 * caller's capacities may ever take it, 403 `ConflictOfInterest` when the caller is also a
 * party the rule excludes (an administrator resolving its own escrow), 409
 * `InvalidEscrowState` (naming the status and the caller's allowed actions) when the state
 * does not allow it now.
 */
export function authorize(action: EscrowAction, state: EscrowState, capacities: ReadonlySet<EscrowCapacity>, now: Date): void {
  ESCROW_LIFECYCLE.assertAllowed(action, context(state, capacities, now));
}

/**
 * The status a caller's action writes (checked again, on the same locked row): a settling
 * action (accept, refund, resolve) needs what its settlement paid.
 */
export function statusAfter(action: EscrowAction, state: EscrowState, capacities: ReadonlySet<EscrowCapacity>, now: Date, outcome?: SettlementOutcome): EscrowStatus {
  return ESCROW_LIFECYCLE.next(action, context(state, capacities, now), outcome);
}

/** The status the automatic release writes (checked: delivered, inspection period over). */
export function statusAfterRelease(state: EscrowState, now: Date, outcome: SettlementOutcome): EscrowStatus {
  return ESCROW_LIFECYCLE.next('release', context(state, PLATFORM, now), outcome);
}

/**
 * The status a held payout's step writes: `hold_payout` (the platform, in place of a release
 * the seller's limits refuse), `complete_payout` (the platform, once they allow it) or
 * `return_payout` (an administrator who is not a party: 403 `ConflictOfInterest` otherwise).
 */
export function statusAfterPayoutStep(
  action: 'hold_payout' | 'complete_payout' | 'return_payout',
  state: EscrowState,
  capacities: ReadonlySet<EscrowCapacity> | 'platform',
  now: Date,
  outcome?: SettlementOutcome,
): EscrowStatus {
  return ESCROW_LIFECYCLE.next(action, context(state, capacities === 'platform' ? PLATFORM : capacities, now), outcome);
}

/** The status a new escrow starts in. */
export const INITIAL_ESCROW_STATUS: EscrowStatus = ESCROW_LIFECYCLE.initial;

const PLATFORM: ReadonlySet<EscrowParty> = new Set(['platform']);

/** Where an action leads when it pays the seller (resolve: where its outcome leads); the table read for tests. */
export function nextStatus(action: Exclude<EscrowAction, 'resolve'>): EscrowStatus;
export function nextStatus(action: 'resolve', outcome: 'release' | 'refund' | 'split'): EscrowStatus;
export function nextStatus(action: EscrowAction, outcome?: 'release' | 'refund' | 'split'): EscrowStatus {
  // A refund pays the buyer back alone; a release or a split pays the seller.
  const paysSeller = action === 'refund' || outcome === 'refund' ? 0n : 1n;
  return ESCROW_LIFECYCLE.target(action, { toSellerMinor: paysSeller, feeMinor: 0n });
}

/** Whether the automatic release may release this escrow at `now`. */
export function isDueForRelease(state: EscrowState, now: Date): boolean {
  return ESCROW_LIFECYCLE.refusal('release', context(state, PLATFORM, now)) === null;
}
