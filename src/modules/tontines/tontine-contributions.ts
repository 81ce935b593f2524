import { post, walletOf, walletRefusal } from '../ledger';
import { cycleDrawKey, drawBeneficiary } from './tontine-draw';
import { statusAfter } from './tontine-lifecycle';
import type { TontineScope } from './tontine-scope';

/**
 * The money of a tontine (see TontineService): a contribution moves from the member's wallet
 * to the pool; the cycle's last one pays the whole pot out, in the same transaction.
 */

/** Moves the contribution into the pool; pays the pot out when it was the cycle's last. Returns the contribution id. */
export async function payContribution({ trx, repo, events, tontine, situation, own }: TontineScope, userId: string, at: Date): Promise<string> {
  const cycle = tontine.currentCycle;
  // Read with the caller's situation, under the tontine's lock: not read again.
  const contribution = own;
  if (!contribution) throw new Error(`no contribution row for member ${userId} in cycle ${cycle} of tontine ${tontine.id}`);
  const wallet = await walletOf(trx, userId, tontine.currency);
  const posting = await post(trx, {
    kind: 'tontine.contribution',
    reference: contribution.id,
    metadata: { tontine_id: tontine.id, cycle, user_id: userId },
    entries: [
      { accountId: wallet.id, amountMinor: -tontine.contributionMinor },
      { accountId: tontine.poolAccountId, amountMinor: tontine.contributionMinor },
    ],
  }).catch((error: unknown) => {
    throw walletRefusal(error, { parties: new Map([[wallet.id, 'sender']]), defaultParty: 'sender', covers: 'this contribution' });
  });
  await repo.markPaid(contribution.id, posting.id, at);
  await events.record({
    subjectType: 'tontine',
    subjectId: tontine.id,
    type: 'tontine.contribution_paid',
    actorUserId: userId,
    payload: { cycle, user_id: userId, amount_minor: tontine.contributionMinor.toString(), posting_id: posting.id, late: contribution.status === 'late' },
    occurredAt: at,
  });
  if ((await repo.unpaidCount(tontine.id, cycle)) === 0) await payOut({ trx, repo, events, tontine, situation }, at);
  return contribution.id;
}

/** The whole pot to the cycle's beneficiary, exactly once; then the next cycle, or the end. */
async function payOut({ trx, repo, events, tontine, situation }: TontineScope, at: Date): Promise<void> {
  const cycle = tontine.currentCycle;
  const cycles = await repo.cycles(tontine.id);
  const current = cycles.find((c) => c.number === cycle);
  if (!current) throw new Error(`tontine ${tontine.id} has no cycle ${cycle}`);
  const pot = tontine.contributionMinor * BigInt(cycles.length);
  let beneficiaryUserId = current.beneficiaryUserId;
  if (beneficiaryUserId === null) {
    // A random tontine: the pot is complete, so this cycle's beneficiary is drawn now, among
    // the members who have not received a pot yet.
    const received = new Set(cycles.flatMap((c) => (c.beneficiaryUserId === null ? [] : [c.beneficiaryUserId])));
    const waiting = (await repo.members(tontine.id)).map((m) => m.userId).filter((userId) => !received.has(userId));
    beneficiaryUserId = drawBeneficiary(tontine.drawSeed, cycle, waiting);
    await repo.setCycleBeneficiary(tontine.id, cycle, beneficiaryUserId);
    await events.record({
      subjectType: 'tontine',
      subjectId: tontine.id,
      type: 'tontine.beneficiary_drawn',
      actorUserId: null,
      payload: { cycle, beneficiary_user_id: beneficiaryUserId, draw_key: cycleDrawKey(tontine.drawSeed, cycle, beneficiaryUserId), candidates: waiting },
      occurredAt: at,
    });
  }
  const wallet = await walletOf(trx, beneficiaryUserId, tontine.currency);
  const posting = await post(
    trx,
    {
      kind: 'tontine.payout',
      reference: `${tontine.id}:${cycle}`,
      metadata: { tontine_id: tontine.id, cycle, user_id: beneficiaryUserId },
      entries: [
        { accountId: tontine.poolAccountId, amountMinor: -pot },
        { accountId: wallet.id, amountMinor: pot },
      ],
    },
    // The pot is owed to the beneficiary: a frozen wallet still receives it.
    { allowFrozen: true },
  );
  await repo.markCyclePaidOut(tontine.id, cycle, posting.id, at);
  await events.record({
    subjectType: 'tontine',
    subjectId: tontine.id,
    type: 'tontine.payout_made',
    actorUserId: null,
    payload: { cycle, beneficiary_user_id: beneficiaryUserId, amount_minor: pot.toString(), posting_id: posting.id },
    occurredAt: at,
  });
  if (cycle < cycles.length) {
    const members = await repo.members(tontine.id);
    await repo.openCycle(
      tontine.id,
      cycle + 1,
      members.map((member) => member.userId),
    );
    await repo.update(tontine.id, { currentCycle: cycle + 1 });
    const next = cycles.find((c) => c.number === cycle + 1);
    await events.record({ subjectType: 'tontine', subjectId: tontine.id, type: 'tontine.cycle_opened', actorUserId: null, payload: { cycle: cycle + 1, due_at: next?.dueAt.toISOString() }, occurredAt: at });
  } else {
    await repo.update(tontine.id, { status: statusAfter(situation, 'contribute', { completesTontine: true }), completedAt: at });
    await events.record({ subjectType: 'tontine', subjectId: tontine.id, type: 'tontine.completed', actorUserId: null, payload: { cycles: cycles.length }, occurredAt: at });
  }
}

