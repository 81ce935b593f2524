import type { PayoutState } from '../held-payouts';
import { toBigInt } from '../ledger';
import type { PayoutOrder, TontineFrequency, TontineStatus } from './tontine-lifecycle';

/** The tontine tables' rows and the module's objects they map to (snake_case only here and in the repository). */
export type MemberRole = 'organizer' | 'member';
export type CycleStatus = 'upcoming' | 'open' | 'paid_out' | 'canceled';
export type ContributionStatus = 'pending' | 'paid' | 'late' | 'refunded';

export interface Tontine {
  id: string;
  name: string;
  organizerUserId: string;
  currency: string;
  contributionMinor: bigint;
  frequency: TontineFrequency;
  maxMembers: number;
  payoutOrder: PayoutOrder;
  status: TontineStatus;
  seedCommitment: string;
  drawSeed: string;
  currentCycle: number;
  /** The contributions paid to the running cycle: every contribution changes it, and expects what it read (see tontine-window.ts). */
  paidInCycle: number;
  poolAccountId: string;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  canceledAt: Date | null;
  /** A random tontine drawn cycle by cycle: each cycle drawn when its pot is complete, the seed revealed at the end. */
  drawPerCycle: boolean;
  /** Set when a platform administrator dissolved it (status `canceled`). */
  dissolutionReason: string | null;
  dissolvedByUserId: string | null;
  dissolvedAt: Date | null;
}

/** A tontine as listed for one user: the user's role, the member count and the running cycle's due date. */
export interface TontineListing extends Tontine {
  role: MemberRole;
  memberCount: number;
  currentDueAt: Date | null;
}

export interface Member {
  userId: string;
  role: MemberRole;
  joinNumber: number;
  payoutPosition: number | null;
  joinedAt: Date;
}

export interface Cycle {
  number: number;
  /** Null for a random tontine's cycle not drawn yet (drawn when its pot is complete). */
  beneficiaryUserId: string | null;
  dueAt: Date;
  status: CycleStatus;
  payoutPostingId: string | null;
  paidOutAt: Date | null;
  /** The cycle's pot held for verification (its beneficiary's limits refused it), when it was. */
  payout?: PayoutState;
}

export interface Contribution {
  id: string;
  cycleNumber: number;
  userId: string;
  status: ContributionStatus;
  postingId: string | null;
  paidAt: Date | null;
}

/**
 * Everything an action and its answer need besides the tontine's own row, as one caller sees
 * it: read by tontine_state (src/modules/tontines/sql), whose queries take their own snapshot,
 * so even in the statement that locks the row, after a wait for the lock, it sees what the
 * transaction it waited for wrote; then worked out in memory by a contribution instead of being
 * read again.
 */
export interface TontineState {
  /** In join order. */
  members: Member[];
  /** In number order. */
  cycles: Cycle[];
  /** Paid contributions (refunded ones excluded) per cycle; a cycle with none may be absent. */
  paidByCycle: Map<number, number>;
  /** The e-mail address, or else the telephone number, of each member and beneficiary found. */
  identifiers: Map<string, string>;
  /** The open cycle's contributions (none before the start). */
  currentContributions: Contribution[];
  /** The caller's contributions, every cycle. */
  ownContributions: Contribution[];
  /** Whether the caller holds an open invitation. */
  invited: boolean;
  /** The pool account's balance, read by its id. */
  poolBalanceMinor: bigint;
}

export interface TontineRow {
  id: string;
  name: string;
  organizer_user_id: string;
  currency: string;
  contribution_minor: string | number;
  frequency: TontineFrequency;
  max_members: number;
  payout_order: PayoutOrder;
  status: TontineStatus;
  seed_commitment: string;
  draw_seed: string;
  current_cycle: number;
  paid_in_cycle: number;
  pool_account_id: string;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  canceled_at: Date | null;
  draw_per_cycle: boolean;
  dissolution_reason: string | null;
  dissolved_by_user_id: string | null;
  dissolved_at: Date | null;
}

export function toTontine(row: TontineRow): Tontine {
  return {
    id: row.id,
    name: row.name,
    organizerUserId: row.organizer_user_id,
    currency: row.currency,
    contributionMinor: toBigInt(row.contribution_minor),
    frequency: row.frequency,
    maxMembers: row.max_members,
    payoutOrder: row.payout_order,
    status: row.status,
    seedCommitment: row.seed_commitment,
    drawSeed: row.draw_seed,
    currentCycle: row.current_cycle,
    paidInCycle: Number(row.paid_in_cycle),
    poolAccountId: row.pool_account_id,
    createdAt: row.created_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
    canceledAt: row.canceled_at,
    drawPerCycle: row.draw_per_cycle === true,
    dissolutionReason: row.dissolution_reason,
    dissolvedByUserId: row.dissolved_by_user_id,
    dissolvedAt: row.dissolved_at,
  };
}
