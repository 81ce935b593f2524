import { describe, expect, it } from 'vitest';
import { walletIdentity } from '../../src/modules/ledger';
import { cycleDrawKey, drawBeneficiary, type TontineSituation } from '../../src/modules/tontines';
import { contributionChange } from '../../src/modules/tontines/tontine-contributions';
import type { Contribution, ContributionStatus, Cycle, Tontine, TontineState } from '../../src/modules/tontines/tontine-rows';

const ID = '00000000-0000-4000-8000-0000000000d1';
const POOL = '00000000-0000-4000-8000-0000000000a1';
const [A, B] = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b'];
const SEED = 'cd'.repeat(32);
const STARTED = new Date('2026-11-01T10:00:00Z');
const AT = new Date('2026-11-05T12:00:00Z');
const DUE = [new Date('2026-11-08T10:00:00Z'), new Date('2026-11-15T10:00:00Z')];

/** A started tontine of A and B (1000 XOF each per cycle), in cycle `cycle`, with the open cycle's contributions in `statuses`. */
function locked(options: { cycle?: number; random?: boolean; statuses?: [ContributionStatus, ContributionStatus]; pool?: bigint } = {}): { tontine: Tontine; state: TontineState } {
  const cycle = options.cycle ?? 1;
  const statuses = options.statuses ?? ['pending', 'pending'];
  const tontine = {
    id: ID,
    name: 'Circle',
    organizerUserId: A,
    currency: 'XOF',
    contributionMinor: 1000n,
    frequency: 'weekly',
    maxMembers: 2,
    payoutOrder: options.random ? 'random' : 'join_order',
    status: 'active',
    seedCommitment: 'ef'.repeat(32),
    drawSeed: SEED,
    currentCycle: cycle,
    paidInCycle: statuses.filter((s) => s === 'paid').length,
    poolAccountId: POOL,
    createdAt: STARTED,
    startedAt: STARTED,
    completedAt: null,
    canceledAt: null,
    drawPerCycle: options.random === true,
    dissolutionReason: null,
    dissolvedByUserId: null,
    dissolvedAt: null,
  } satisfies Tontine;
  const beneficiaries = options.random ? [cycle > 1 ? B : null, null] : [A, B];
  const cycles: Cycle[] = [1, 2].map((number) => ({
    number,
    beneficiaryUserId: beneficiaries[number - 1] ?? null,
    dueAt: DUE[number - 1] as Date,
    status: number < cycle ? 'paid_out' : number === cycle ? 'open' : 'upcoming',
    payoutPostingId: number < cycle ? 'p-payout-1' : null,
    paidOutAt: number < cycle ? STARTED : null,
  }));
  const current: Contribution[] = [A, B].map((userId, index) => {
    const status = statuses[index] as ContributionStatus;
    return { id: `k-${cycle}-${index}`, cycleNumber: cycle, userId, status, postingId: status === 'paid' ? `p-${index}` : null, paidAt: status === 'paid' ? STARTED : null };
  });
  const earlier: Contribution = { id: 'k-1-earlier', cycleNumber: 1, userId: B, status: 'paid', postingId: 'p-earlier', paidAt: STARTED };
  return {
    tontine,
    state: {
      members: [
        { userId: A, role: 'organizer', joinNumber: 1, payoutPosition: options.random ? null : 1, joinedAt: STARTED },
        { userId: B, role: 'member', joinNumber: 2, payoutPosition: options.random ? (cycle > 1 ? 1 : null) : 2, joinedAt: STARTED },
      ],
      cycles,
      paidByCycle: new Map(statuses.includes('paid') ? [[cycle, statuses.filter((s) => s === 'paid').length]] : []),
      identifiers: new Map([
        [A, 'a@test.example'],
        [B, 'b@test.example'],
      ]),
      currentContributions: current,
      ownContributions: cycle > 1 ? [earlier, current[1] as Contribution] : [current[1] as Contribution],
      invited: false,
      poolBalanceMinor: options.pool ?? 1000n * BigInt(statuses.filter((s) => s === 'paid').length),
    },
  };
}

const situation = (cycle = 1): TontineSituation => ({ status: 'active', role: 'member', memberCount: 2, maxMembers: 2, currentCycle: cycle, paidCurrentCycle: false, payoutMade: cycle > 1 });
const ids = () => {
  let n = 0;
  return () => `new-${(n += 1)}`;
};
const paidEvent = (cycle: number, late = false) => ({
  subjectType: 'tontine',
  subjectId: ID,
  type: 'tontine.contribution_paid',
  actorUserId: B,
  payload: { cycle, user_id: B, amount_minor: '1000', late },
  occurredAt: AT,
  postingIds: { posting_id: 0 },
});
const paidChange = (cycle: number, before: ContributionStatus = 'pending') => ({
  table: 'tontine_contributions',
  id: `k-${cycle}-1`,
  expect: { status: before },
  set: { status: 'paid', paid_at: AT.toISOString() },
  postingIds: { posting_id: 0 },
});

describe('a contribution decided in memory', () => {
  it('that is not the last: its posting, its row paid (while still unpaid), one event naming the posting, the state after it', () => {
    const before = locked();
    const change = contributionChange(before, situation(), B, AT, ids());
    expect(change.contributionId).toBe('k-1-1');
    expect(change.postings).toEqual([
      {
        kind: 'tontine.contribution',
        reference: 'k-1-1',
        metadata: { tontine_id: ID, cycle: 1, user_id: B },
        entries: [
          { account: walletIdentity(B, 'XOF'), amountMinor: -1000n },
          { account: { id: POOL }, amountMinor: 1000n },
        ],
      },
    ]);
    expect(change.changes).toEqual([paidChange(1)]);
    expect(change.events).toEqual([paidEvent(1)]);
    expect(change.tontine).toBe(before.tontine);
    const paid = { id: 'k-1-1', cycleNumber: 1, userId: B, status: 'paid', postingId: null, paidAt: AT };
    expect(change.state).toEqual({
      ...before.state,
      paidByCycle: new Map([[1, 1]]),
      currentContributions: [before.state.currentContributions[0], paid],
      ownContributions: [paid],
      poolBalanceMinor: 1000n,
    });
    // What it was decided from is left as it was.
    expect(before.state.currentContributions[1]?.status).toBe('pending');
    expect(before.state.paidByCycle.size).toBe(0);
  });

  it('that is late says so, and pays the row while it is still late', () => {
    const change = contributionChange(locked({ statuses: ['pending', 'late'] }), situation(), B, AT, ids());
    expect(change.changes).toEqual([paidChange(1, 'late')]);
    expect(change.events).toEqual([paidEvent(1, true)]);
  });

  it("that is the cycle's last: the pot paid out, the cycle closed, the next one opened with every member's contribution pending", () => {
    const before = locked({ statuses: ['paid', 'pending'] });
    const change = contributionChange(before, situation(), B, AT, ids());
    expect(change.postings.map((posting) => [posting.kind, posting.reference, posting.entries.map((entry) => entry.amountMinor)])).toEqual([
      ['tontine.contribution', 'k-1-1', [-1000n, 1000n]],
      ['tontine.payout', `${ID}:1`, [-2000n, 2000n]],
    ]);
    expect(change.postings[1]?.entries[1]?.account).toEqual(walletIdentity(A, 'XOF'));
    expect(change.changes).toEqual([
      paidChange(1),
      { table: 'tontine_cycles', key: { tontine_id: ID, number: 1 }, expect: { status: 'open' }, set: { status: 'paid_out', paid_out_at: AT.toISOString() }, postingIds: { payout_posting_id: 1 } },
      { table: 'tontine_cycles', key: { tontine_id: ID, number: 2 }, expect: { status: 'upcoming' }, set: { status: 'open' } },
      { table: 'tontines', id: ID, expect: { status: 'active', current_cycle: 1 }, set: { current_cycle: 2 } },
      { table: 'tontine_contributions', op: 'insert', id: 'new-1', set: { tontine_id: ID, cycle_number: 2, user_id: A } },
      { table: 'tontine_contributions', op: 'insert', id: 'new-2', set: { tontine_id: ID, cycle_number: 2, user_id: B } },
    ]);
    expect(change.events).toEqual([
      paidEvent(1),
      { subjectType: 'tontine', subjectId: ID, type: 'tontine.payout_made', actorUserId: null, payload: { cycle: 1, beneficiary_user_id: A, amount_minor: '2000' }, occurredAt: AT, postingIds: { posting_id: 1 } },
      { subjectType: 'tontine', subjectId: ID, type: 'tontine.cycle_opened', actorUserId: null, payload: { cycle: 2, due_at: DUE[1]?.toISOString() }, occurredAt: AT },
    ]);
    expect(change.tontine).toEqual({ ...before.tontine, currentCycle: 2 });
    const opened = [
      { id: 'new-1', cycleNumber: 2, userId: A, status: 'pending', postingId: null, paidAt: null },
      { id: 'new-2', cycleNumber: 2, userId: B, status: 'pending', postingId: null, paidAt: null },
    ];
    const paid = { id: 'k-1-1', cycleNumber: 1, userId: B, status: 'paid', postingId: null, paidAt: AT };
    expect(change.state).toEqual({
      ...before.state,
      paidByCycle: new Map([[1, 2]]),
      cycles: [
        { ...before.state.cycles[0], status: 'paid_out', paidOutAt: AT, payoutPostingId: null },
        { ...before.state.cycles[1], status: 'open' },
      ],
      currentContributions: opened,
      ownContributions: [paid, opened[1]],
      poolBalanceMinor: 0n,
    });
  });

  it("that completes a random tontine's cycle draws its beneficiary: recorded on the cycle and as the member's position, with the draw's event", () => {
    const before = locked({ random: true, statuses: ['paid', 'pending'] });
    const winner = drawBeneficiary(SEED, 1, [A, B]);
    const change = contributionChange(before, situation(), B, AT, ids());
    expect(change.postings[1]?.entries[1]?.account).toEqual(walletIdentity(winner, 'XOF'));
    expect(change.changes.slice(1, 3)).toEqual([
      {
        table: 'tontine_cycles',
        key: { tontine_id: ID, number: 1 },
        expect: { status: 'open' },
        set: { status: 'paid_out', paid_out_at: AT.toISOString(), beneficiary_user_id: winner },
        postingIds: { payout_posting_id: 1 },
      },
      { table: 'tontine_members', key: { tontine_id: ID, user_id: winner }, set: { payout_position: 1 } },
    ]);
    expect(change.events.map((event) => event.type)).toEqual(['tontine.contribution_paid', 'tontine.beneficiary_drawn', 'tontine.payout_made', 'tontine.cycle_opened']);
    expect(change.events[1]).toEqual({
      subjectType: 'tontine',
      subjectId: ID,
      type: 'tontine.beneficiary_drawn',
      actorUserId: null,
      payload: { cycle: 1, beneficiary_user_id: winner, draw_key: cycleDrawKey(SEED, 1, winner), candidates: [A, B] },
      occurredAt: AT,
    });
    expect(change.events[2]?.payload).toEqual({ cycle: 1, beneficiary_user_id: winner, amount_minor: '2000' });
    expect(change.state.members.map((member) => [member.userId, member.payoutPosition])).toEqual([
      [A, winner === A ? 1 : null],
      [B, winner === B ? 1 : null],
    ]);
    expect(change.state.cycles[0]?.beneficiaryUserId).toBe(winner);
  });

  it("that completes the last cycle completes the tontine: no cycle opened, the tontine's row guarded on the cycle it read", () => {
    const before = locked({ cycle: 2, random: true, statuses: ['pending', 'paid'] });
    const change = contributionChange(before, situation(2), A, AT, ids());
    expect(change.changes.map((row) => row.table)).toEqual(['tontine_contributions', 'tontine_cycles', 'tontine_members', 'tontines']);
    expect(change.changes.at(-1)).toEqual({ table: 'tontines', id: ID, expect: { status: 'active', current_cycle: 2 }, set: { status: 'completed', completed_at: AT.toISOString() } });
    // Only A has not received a pot: drawn alone.
    expect(change.changes[2]).toEqual({ table: 'tontine_members', key: { tontine_id: ID, user_id: A }, set: { payout_position: 2 } });
    expect(change.events.map((event) => event.type)).toEqual(['tontine.contribution_paid', 'tontine.beneficiary_drawn', 'tontine.payout_made', 'tontine.completed']);
    expect(change.events.at(-1)).toEqual({ subjectType: 'tontine', subjectId: ID, type: 'tontine.completed', actorUserId: null, payload: { cycles: 2 }, occurredAt: AT });
    expect(change.tontine).toEqual({ ...before.tontine, status: 'completed', completedAt: AT });
    expect(change.state.currentContributions.map((k) => k.status)).toEqual(['paid', 'paid']);
    expect(change.state.cycles.map((cycle) => cycle.status)).toEqual(['paid_out', 'paid_out']);
    expect(change.state.poolBalanceMinor).toBe(0n);
  });

  it('refuses a member with no contribution in the open cycle', () => {
    expect(() => contributionChange(locked(), situation(), '00000000-0000-4000-8000-0000000000ff', AT, ids())).toThrow(`no contribution row for member 00000000-0000-4000-8000-0000000000ff in cycle 1 of tontine ${ID}`);
  });
});
