import type { components } from '../../contract';
import type { Page } from '../../db/keyset';
import { formatMinor, minorToNumber } from '../ledger';
import type { TontineAction, TontineRole } from './tontine-lifecycle';
import type { Contribution, Cycle, Member, Tontine } from './tontine-rows';

/** The contract's `Tontine`, generated (summary fields; the detail fields are optional). */
export type TontineView = components['schemas']['Tontine'];

export interface MemberView {
  user_id: string;
  identifier: string;
  role: Member['role'];
  position: number | null;
  received: boolean;
  received_at: string | null;
  joined_at: string;
}

export interface CycleView {
  number: number;
  beneficiary_user_id: string | null;
  beneficiary_identifier: string | null;
  status: Cycle['status'];
  due_at: string;
  collected: string;
  collected_minor: string;
  paid_out_at: string | null;
}

export interface ContributionView {
  user_id: string;
  identifier: string;
  status: Contribution['status'];
  paid_at: string | null;
}

export type TontinePage = Page<TontineView>;

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

export function summaryView(tontine: Tontine, facts: { role: TontineRole; memberCount: number; currentDueAt: Date | null; exponent: number }): TontineView {
  const random = tontine.payoutOrder === 'random';
  return {
    id: tontine.id,
    name: tontine.name,
    status: tontine.status,
    role: facts.role,
    currency: tontine.currency,
    contribution_amount: minorToNumber(tontine.contributionMinor, facts.exponent),
    contribution_amount_minor: tontine.contributionMinor.toString(),
    frequency: tontine.frequency,
    member_count: facts.memberCount,
    max_members: tontine.maxMembers,
    current_cycle: tontine.currentCycle,
    next_payout_at: tontine.status === 'active' ? iso(facts.currentDueAt) : null,
    created_at: tontine.createdAt.toISOString(),
    payout_order: tontine.payoutOrder,
    seed_commitment: random ? tontine.seedCommitment : null,
    draw_seed: seedRevealed(tontine) ? tontine.drawSeed : null,
    started_at: iso(tontine.startedAt),
    completed_at: iso(tontine.completedAt),
    canceled_at: iso(tontine.canceledAt),
    dissolution:
      tontine.dissolvedAt === null ? null : { reason: tontine.dissolutionReason ?? '', dissolved_at: tontine.dissolvedAt.toISOString(), dissolved_by: 'platform_administrator' },
  };
}

/**
 * Whether `draw_seed` is public: never before the start (nobody can steer the draw by joining);
 * for a tontine drawn cycle by cycle, only once no draw is left (completed or canceled), so no
 * one can compute a future beneficiary; for one whose whole order was drawn at the start
 * (`draw_per_cycle` false), from the start.
 */
function seedRevealed(tontine: Tontine): boolean {
  if (tontine.payoutOrder !== 'random' || tontine.startedAt === null) return false;
  return !tontine.drawPerCycle || tontine.status !== 'active';
}

/**
 * `o***@demo.example`, `+225******01`: how a user who was invited but has not joined sees the
 * members (enough to recognise a group, not to harvest its contacts).
 */
export function maskIdentifier(identifier: string): string {
  const at = identifier.lastIndexOf('@');
  if (at > 0) return `${identifier.slice(0, 1)}***${identifier.slice(at)}`;
  if (identifier.startsWith('+') && identifier.length > 6) return `${identifier.slice(0, 4)}${'*'.repeat(identifier.length - 6)}${identifier.slice(-2)}`;
  return '***';
}

export interface TontineDetailFacts {
  role: TontineRole;
  exponent: number;
  members: Member[];
  cycles: Cycle[];
  currentContributions: Contribution[];
  paidCountsByCycle: Map<number, number>;
  identifiers: Map<string, string>;
  poolBalanceMinor: bigint;
  netPositionMinor: bigint;
  allowedActions: TontineAction[];
}

export function detailView(tontine: Tontine, facts: TontineDetailFacts): TontineView {
  // Before joining, an invited user sees the members masked; members see them in full.
  const mask = facts.role === 'invited' ? maskIdentifier : (text: string) => text;
  const identifier = (userId: string) => mask(facts.identifiers.get(userId) ?? userId);
  const current = facts.cycles.find((cycle) => cycle.number === tontine.currentCycle);
  const payoutOf = new Map(facts.cycles.filter((cycle) => cycle.status === 'paid_out' && (cycle.payout === undefined || cycle.payout.status === 'completed')).map((cycle) => [cycle.beneficiaryUserId, cycle]));
  const contributionOf = new Map(facts.currentContributions.map((contribution) => [contribution.userId, contribution]));
  return {
    ...summaryView(tontine, { role: facts.role, memberCount: facts.members.length, currentDueAt: current?.dueAt ?? null, exponent: facts.exponent }),
    members: facts.members.map((member) => ({
      user_id: member.userId,
      identifier: identifier(member.userId),
      role: member.role,
      position: member.payoutPosition,
      received: payoutOf.has(member.userId),
      received_at: iso(payoutOf.get(member.userId)?.paidOutAt ?? null),
      joined_at: member.joinedAt.toISOString(),
    })),
    cycles: facts.cycles.map((cycle) => {
      const collected = tontine.contributionMinor * BigInt(facts.paidCountsByCycle.get(cycle.number) ?? 0);
      return {
        number: cycle.number,
        beneficiary_user_id: cycle.beneficiaryUserId,
        beneficiary_identifier: cycle.beneficiaryUserId === null ? null : identifier(cycle.beneficiaryUserId),
        status: cycle.status,
        due_at: cycle.dueAt.toISOString(),
        collected: formatMinor(collected, facts.exponent),
        collected_minor: collected.toString(),
        paid_out_at: iso(cycle.paidOutAt),
        ...(cycle.payout ? { payout: cycle.payout } : {}),
      };
    }),
    // In member order, so every member reads the same list; a completed tontine runs no cycle.
    current_contributions: tontine.status === 'completed' ? [] : facts.members.flatMap((member) => {
      const contribution = contributionOf.get(member.userId);
      return contribution ? [{ user_id: member.userId, identifier: identifier(member.userId), status: contribution.status, paid_at: iso(contribution.paidAt) }] : [];
    }),
    pool_balance: formatMinor(facts.poolBalanceMinor, facts.exponent),
    pool_balance_minor: facts.poolBalanceMinor.toString(),
    net_position: formatMinor(facts.netPositionMinor, facts.exponent),
    net_position_minor: facts.netPositionMinor.toString(),
    allowed_actions: facts.allowedActions,
  };
}
