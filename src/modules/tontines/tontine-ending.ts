import { post, walletsOf, type LedgerAccount } from '../ledger';
import { statusAfter } from './tontine-lifecycle';
import type { TontineScope } from './tontine-scope';

/**
 * Ends a forming or active tontine (cancel, dissolve): refunds the open cycle's payments from
 * the pool, cancels the remaining cycles, lapses the open invitations, `canceled`. Returns
 * the amount refunded.
 */
export async function endTontine({ trx, repo, events, tontine, situation, state }: TontineScope, action: 'cancel' | 'dissolve', actorUserId: string, at: Date): Promise<bigint> {
  const id = tontine.id;
  let refundedMinor = 0n;
  if (tontine.status === 'active') {
    const pool = tontine.poolAccountId;
    // The open cycle's contributions as read under the lock; the payers' wallets in one statement.
    const paid = state.currentContributions.filter((contribution) => contribution.status === 'paid');
    const wallets = await walletsOf(trx, paid.map((contribution) => contribution.userId), tontine.currency);
    for (const contribution of paid) {
      const wallet = wallets.get(contribution.userId) as LedgerAccount;
      const posting = await post(
        trx,
        {
          kind: 'tontine.refund',
          reference: contribution.id,
          reversesPostingId: contribution.postingId ?? undefined,
          metadata: { tontine_id: id, cycle: tontine.currentCycle, user_id: contribution.userId },
          entries: [
            { accountId: pool, amountMinor: -tontine.contributionMinor },
            { accountId: wallet.id, amountMinor: tontine.contributionMinor },
          ],
        },
        // Money going back to its owner: a frozen wallet still gets it.
        { allowFrozen: true },
      );
      await repo.markRefunded(contribution.id, posting.id, at);
      refundedMinor += tontine.contributionMinor;
      await events.record({
        subjectType: 'tontine',
        subjectId: id,
        type: 'tontine.contribution_refunded',
        actorUserId,
        payload: { cycle: tontine.currentCycle, user_id: contribution.userId, amount_minor: tontine.contributionMinor.toString(), posting_id: posting.id },
        occurredAt: at,
      });
    }
    await repo.cancelRemainingCycles(id);
  }
  await repo.lapseOpenInvitations(id);
  await repo.update(id, { status: statusAfter(situation, action), canceledAt: at });
  return refundedMinor;
}

