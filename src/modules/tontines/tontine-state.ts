import type { Knex } from 'knex';
import { toBigInt } from '../ledger';
import type { PayoutState } from '../held-payouts';
import { allowedActions } from './tontine-lifecycle';
import { detailView, summaryView, type TontineView } from './tontine-presenter';
import type { Contribution, ContributionStatus, Cycle, CycleStatus, Member, MemberRole, Tontine, TontineState } from './tontine-rows';
import { outsiderSituationFrom, situationFrom } from './tontine-situation';

export type { TontineState } from './tontine-rows';

interface MemberJson {
  user_id: string;
  role: MemberRole;
  join_number: number;
  payout_position: number | null;
  joined_at: string;
  identifier: string | null;
}

interface CycleJson {
  number: number;
  beneficiary_user_id: string | null;
  due_at: string;
  status: CycleStatus;
  payout_posting_id: string | null;
  paid_out_at: string | null;
  identifier: string | null;
  paid: number;
  payout?: PayoutState | null;
}

interface ContributionJson {
  id: string;
  cycle_number: number;
  user_id: string;
  status: ContributionStatus;
  posting_id: string | null;
  paid_at: string | null;
}

/** What tontine_state answers (src/modules/tontines/sql/tontine_state.sql). */
interface StateJson {
  members: MemberJson[];
  cycles: CycleJson[];
  contributions: ContributionJson[];
  invited: boolean;
  pool_balance_minor: string | null;
}

/**
 * The state of one tontine as one user sees it, in one statement: tontine_state, which takes a
 * snapshot of its own when it runs (so in the statement that locks the row, after a wait for
 * the lock, it still sees what the transaction it waited for wrote).
 */
export function tontineStateColumn(tontineAlias: string): string {
  return `tontine_state(${tontineAlias}.id, ${tontineAlias}.current_cycle, ?::uuid, ${tontineAlias}.pool_account_id) AS state`;
}

const date = (text: string): Date => new Date(text);
const dateOrNull = (text: string | null): Date | null => (text === null ? null : new Date(text));

function toContribution(row: ContributionJson): Contribution {
  return { id: row.id, cycleNumber: row.cycle_number, userId: row.user_id, status: row.status, postingId: row.posting_id, paidAt: dateOrNull(row.paid_at) };
}

/** The tontine's state as `userId` sees it (one statement; call it after locking or finding the row). */
export async function readTontineState(db: Knex | Knex.Transaction, tontine: Tontine, userId: string): Promise<TontineState> {
  const result = await db.raw('SELECT tontine_state(?::uuid, ?::integer, ?::uuid, ?::uuid) AS state', [tontine.id, tontine.currentCycle, userId, tontine.poolAccountId]);
  return stateFromColumn((result as { rows: Array<{ state: unknown }> }).rows[0]?.state, tontine, userId);
}

/** The state from tontine_state's answer (pg hands json over parsed; a driver that does not, as text). */
export function stateFromColumn(value: unknown, tontine: Tontine, userId: string): TontineState {
  const row = (typeof value === 'string' ? JSON.parse(value) : value) as StateJson;
  const identifiers = new Map<string, string>();
  const members = row.members.map((m): Member => {
    if (m.identifier !== null) identifiers.set(m.user_id, m.identifier);
    return { userId: m.user_id, role: m.role, joinNumber: m.join_number, payoutPosition: m.payout_position, joinedAt: date(m.joined_at) };
  });
  const paidByCycle = new Map<number, number>();
  const cycles = row.cycles.map((c): Cycle => {
    if (c.beneficiary_user_id !== null && c.identifier !== null) identifiers.set(c.beneficiary_user_id, c.identifier);
    if (c.paid > 0) paidByCycle.set(c.number, Number(c.paid));
    const cycle: Cycle = { number: c.number, beneficiaryUserId: c.beneficiary_user_id, dueAt: date(c.due_at), status: c.status, payoutPostingId: c.payout_posting_id, paidOutAt: dateOrNull(c.paid_out_at) };
    // Timestamps as json_build_object writes them, in the API's form.
    return c.payout ? { ...cycle, payout: { ...c.payout, held_at: date(c.payout.held_at).toISOString(), settled_at: c.payout.settled_at === null ? null : date(c.payout.settled_at).toISOString() } } : cycle;
  });
  const contributions = row.contributions.map(toContribution);
  return {
    members,
    cycles,
    paidByCycle,
    identifiers,
    currentContributions: tontine.currentCycle > 0 ? contributions.filter((k) => k.cycleNumber === tontine.currentCycle) : [],
    ownContributions: contributions.filter((k) => k.userId === userId),
    invited: row.invited === true,
    poolBalanceMinor: row.pool_balance_minor === null ? 0n : toBigInt(row.pool_balance_minor),
  };
}

/**
 * The tontine as `userId` sees it (404 when they may not), from its row and state, and the
 * list view its events carry (`data.object`, as tontineSnapshot reads it: the list view, read
 * by nobody in particular). Nothing is read: `exponent` is the currency's.
 */
export function describeState(
  tontine: Tontine,
  state: TontineState,
  userId: string,
  exponent: number,
  roleOverride?: 'former_member' | 'administrator',
): { view: TontineView; object: TontineView } {
  const situation = roleOverride ? outsiderSituationFrom(tontine, state.members, roleOverride) : situationFrom(tontine, userId, state);
  const { cycles } = state;
  const received = cycles.filter((c) => isPaidOut(c) && c.beneficiaryUserId === userId).length;
  const paidOwn = state.ownContributions.filter((k) => k.status === 'paid').length;
  const netPositionMinor = tontine.contributionMinor * (BigInt(received) * BigInt(cycles.length) - BigInt(paidOwn));
  const view = detailView(tontine, {
    role: situation.role,
    exponent,
    members: state.members,
    cycles,
    currentContributions: state.currentContributions,
    paidCountsByCycle: state.paidByCycle,
    identifiers: state.identifiers,
    poolBalanceMinor: state.poolBalanceMinor,
    netPositionMinor,
    allowedActions: allowedActions(situation),
  });
  const currentDueAt = cycles.find((cycle) => cycle.number === tontine.currentCycle)?.dueAt ?? null;
  const object = summaryView(tontine, { role: 'administrator', memberCount: state.members.length, currentDueAt, exponent });
  return { view, object };
}

/** Whether the cycle's pot reached its beneficiary (not one held, nor returned to its payers). */
export function isPaidOut(cycle: Pick<Cycle, 'status' | 'payout'>): boolean {
  return cycle.status === 'paid_out' && (cycle.payout === undefined || cycle.payout.status === 'completed');
}
