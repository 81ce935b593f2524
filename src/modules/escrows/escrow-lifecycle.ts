import { ConflictOfInterestError, EscrowRoleForbiddenError, InvalidEscrowStateError } from './escrow-errors';

/**
 * The escrow state machine, as one table (pure: no database, no clock of its own).
 *
 *   awaiting_funding --fund (buyer)--> funded --deliver (seller)--> delivered
 *   awaiting_funding --cancel (buyer or seller)--> canceled
 *   funded | delivered --accept (buyer)--> released
 *   delivered --inspection period over (platform)--> released
 *   funded | delivered (before the inspection period ends) --dispute (buyer)--> disputed
 *   funded | delivered | disputed --refund (seller)--> refunded
 *   disputed --resolve (administrator who is not a party)--> released | refunded
 *
 * `accepted` exists in the contract for a release in progress; here a release happens in the
 * same transaction as the acceptance, so no escrow is ever stored `accepted`.
 */

export const ESCROW_STATUSES = ['awaiting_funding', 'funded', 'delivered', 'accepted', 'disputed', 'released', 'refunded', 'canceled'] as const;
export type EscrowStatus = (typeof ESCROW_STATUSES)[number];

export const ESCROW_ACTIONS = ['fund', 'deliver', 'accept', 'dispute', 'refund', 'cancel', 'resolve'] as const;
export type EscrowAction = (typeof ESCROW_ACTIONS)[number];

/** What a caller is to one escrow; an administrator who is also a party is both. */
export type EscrowCapacity = 'buyer' | 'seller' | 'administrator';

/** Statuses in which the buyer's money sits in the holding account. */
export const HELD_STATUSES: readonly EscrowStatus[] = ['funded', 'delivered', 'disputed'];

interface Rule {
  by: readonly EscrowCapacity[];
  from: readonly EscrowStatus[];
  /** Capacities that disqualify a caller even when it also holds one of `by` (nobody rules on their own escrow). */
  notBy?: readonly EscrowCapacity[];
}

export const ESCROW_RULES: Readonly<Record<EscrowAction, Rule>> = {
  fund: { by: ['buyer'], from: ['awaiting_funding'] },
  deliver: { by: ['seller'], from: ['funded'] },
  accept: { by: ['buyer'], from: ['funded', 'delivered'] },
  dispute: { by: ['buyer'], from: ['funded', 'delivered'] },
  refund: { by: ['seller'], from: ['funded', 'delivered', 'disputed'] },
  cancel: { by: ['buyer', 'seller'], from: ['awaiting_funding'] },
  resolve: { by: ['administrator'], from: ['disputed'], notBy: ['buyer', 'seller'] },
};

/** The part of an escrow the rules read. */
export interface EscrowState {
  status: EscrowStatus;
  inspectionEndsAt: Date | null;
}

function allowedNow(action: EscrowAction, state: EscrowState, now: Date): boolean {
  if (!ESCROW_RULES[action].from.includes(state.status)) return false;
  // A dispute must come before the inspection period ends; after it the release is due.
  if (action === 'dispute' && state.inspectionEndsAt !== null && now.getTime() >= state.inspectionEndsAt.getTime()) return false;
  return true;
}

function mayEverTake(action: EscrowAction, capacities: ReadonlySet<EscrowCapacity>): boolean {
  return ESCROW_RULES[action].by.some((c) => capacities.has(c));
}

function conflicted(action: EscrowAction, capacities: ReadonlySet<EscrowCapacity>): boolean {
  return ESCROW_RULES[action].notBy?.some((c) => capacities.has(c)) ?? false;
}

/** The actions a caller with `capacities` may take now, in the table's order. */
export function allowedActions(state: EscrowState, capacities: ReadonlySet<EscrowCapacity>, now: Date): EscrowAction[] {
  return ESCROW_ACTIONS.filter((action) => mayEverTake(action, capacities) && !conflicted(action, capacities) && allowedNow(action, state, now));
}

/**
 * Checks that a caller may take `action` now: 403 `InsufficientRole` when none of the
 * caller's capacities may ever take it, 403 `ConflictOfInterest` when the caller is also a
 * party the rule excludes (an administrator resolving its own escrow), 409
 * `InvalidEscrowState` (naming the status and the caller's allowed actions) when the state
 * does not allow it now.
 */
export function authorize(action: EscrowAction, state: EscrowState, capacities: ReadonlySet<EscrowCapacity>, now: Date): void {
  const rule = ESCROW_RULES[action];
  if (!mayEverTake(action, capacities)) throw new EscrowRoleForbiddenError(action, rule.by);
  if (conflicted(action, capacities)) throw new ConflictOfInterestError(action);
  if (!allowedNow(action, state, now)) throw new InvalidEscrowStateError(action, state.status, allowedActions(state, capacities, now));
}

/** Where an action leads (resolve: where its outcome leads). */
export function nextStatus(action: Exclude<EscrowAction, 'resolve'>): EscrowStatus;
export function nextStatus(action: 'resolve', outcome: 'release' | 'refund' | 'split'): EscrowStatus;
export function nextStatus(action: EscrowAction, outcome?: 'release' | 'refund' | 'split'): EscrowStatus {
  switch (action) {
    case 'fund':
      return 'funded';
    case 'deliver':
      return 'delivered';
    case 'accept':
      return 'released';
    case 'dispute':
      return 'disputed';
    case 'refund':
      return 'refunded';
    case 'cancel':
      return 'canceled';
    case 'resolve':
      return outcome === 'refund' ? 'refunded' : 'released';
  }
}

/** Whether the automatic release may release this escrow at `now`. */
export function isDueForRelease(state: EscrowState, now: Date): boolean {
  return state.status === 'delivered' && state.inspectionEndsAt !== null && state.inspectionEndsAt.getTime() <= now.getTime();
}
