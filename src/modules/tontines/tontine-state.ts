import type { Knex } from 'knex';
import { toBigInt } from '../ledger';
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
}

interface ContributionJson {
  id: string;
  cycle_number: number;
  user_id: string;
  status: ContributionStatus;
  posting_id: string | null;
  paid_at: string | null;
}

interface StateRow {
  members: MemberJson[];
  cycles: CycleJson[];
  contributions: ContributionJson[];
  invited: boolean;
  pool_balance_minor: string | null;
}

/**
 * Members with their identifiers (users), cycles with their beneficiary's identifier and paid
 * count, the open cycle's and the caller's contributions, the caller's open invitation and
 * the pool's balance (its ledger account by id). Each part is an index scan of one tontine.
 */
const STATE_SQL = `SELECT
  (SELECT coalesce(json_agg(json_build_object('user_id', m.user_id, 'role', m.role, 'join_number', m.join_number,
      'payout_position', m.payout_position, 'joined_at', m.joined_at, 'identifier', coalesce(u.email, u.phone)) ORDER BY m.join_number), '[]'::json)
     FROM tontine_members m LEFT JOIN users u ON u.id = m.user_id WHERE m.tontine_id = :id) AS members,
  (SELECT coalesce(json_agg(json_build_object('number', c.number, 'beneficiary_user_id', c.beneficiary_user_id, 'due_at', c.due_at,
      'status', c.status, 'payout_posting_id', c.payout_posting_id, 'paid_out_at', c.paid_out_at, 'identifier', coalesce(u.email, u.phone),
      'paid', (SELECT count(*) FROM tontine_contributions k WHERE k.tontine_id = c.tontine_id AND k.cycle_number = c.number AND k.status = 'paid')) ORDER BY c.number), '[]'::json)
     FROM tontine_cycles c LEFT JOIN users u ON u.id = c.beneficiary_user_id WHERE c.tontine_id = :id) AS cycles,
  (SELECT coalesce(json_agg(json_build_object('id', k.id, 'cycle_number', k.cycle_number, 'user_id', k.user_id, 'status', k.status,
      'posting_id', k.posting_id, 'paid_at', k.paid_at) ORDER BY k.cycle_number, k.user_id), '[]'::json)
     FROM tontine_contributions k WHERE k.tontine_id = :id AND (k.cycle_number = :cycle OR k.user_id = :userId)) AS contributions,
  EXISTS (SELECT 1 FROM tontine_invitations i WHERE i.tontine_id = :id AND i.user_id = :userId AND i.status = 'open') AS invited,
  (SELECT a.balance_minor::text FROM ledger_accounts a WHERE a.id = :poolAccountId) AS pool_balance_minor`;

const date = (text: string): Date => new Date(text);
const dateOrNull = (text: string | null): Date | null => (text === null ? null : new Date(text));

function toContribution(row: ContributionJson): Contribution {
  return { id: row.id, cycleNumber: row.cycle_number, userId: row.user_id, status: row.status, postingId: row.posting_id, paidAt: dateOrNull(row.paid_at) };
}

/** The tontine's state as `userId` sees it (one statement; call it after locking or finding the row). */
export async function readTontineState(db: Knex | Knex.Transaction, tontine: Tontine, userId: string): Promise<TontineState> {
  const result = await db.raw(STATE_SQL, { id: tontine.id, cycle: tontine.currentCycle, userId, poolAccountId: tontine.poolAccountId });
  const row = (result as { rows: StateRow[] }).rows[0] as StateRow;
  const identifiers = new Map<string, string>();
  const members = row.members.map((m): Member => {
    if (m.identifier !== null) identifiers.set(m.user_id, m.identifier);
    return { userId: m.user_id, role: m.role, joinNumber: m.join_number, payoutPosition: m.payout_position, joinedAt: date(m.joined_at) };
  });
  const paidByCycle = new Map<number, number>();
  const cycles = row.cycles.map((c): Cycle => {
    if (c.beneficiary_user_id !== null && c.identifier !== null) identifiers.set(c.beneficiary_user_id, c.identifier);
    if (c.paid > 0) paidByCycle.set(c.number, Number(c.paid));
    return { number: c.number, beneficiaryUserId: c.beneficiary_user_id, dueAt: date(c.due_at), status: c.status, payoutPostingId: c.payout_posting_id, paidOutAt: dateOrNull(c.paid_out_at) };
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
  const received = cycles.filter((c) => c.status === 'paid_out' && c.beneficiaryUserId === userId).length;
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
