import crypto from 'node:crypto';

/**
 * The auditable payout draw (commit-reveal), exactly as the contract documents it under
 * `draw_seed`: a secret seed of 32 random bytes, written as 64 lower-case hex characters; its
 * commitment hex(SHA-256(seed)) is published when the tontine is created, before anyone joins.
 *
 * Each cycle's beneficiary is drawn only when that cycle's pot is complete (in the transaction
 * of its last contribution), among the members who have not received a pot yet: the member
 * with the smallest hex(SHA-256(seed + ':' + cycle + ':' + user_id)) wins. Nobody, the
 * organizer included, knows who receives a cycle before its pot is complete, and once a pot
 * has been paid out no member can end the tontine: an organizer who dislikes the draw cannot
 * cancel and start again. The seed is revealed when no draw is left (the tontine completed or
 * was canceled), and every member can then check every draw against the commitment.
 *
 * Tontines started before that rule drew the whole order at the start (`drawOrder`, members
 * sorted by hex(SHA-256(seed + ':' + user_id))) and revealed the seed then; their cycles
 * already name their beneficiaries.
 */

export function newDrawSeed(): string {
  return crypto.randomBytes(32).toString('hex');
}

function sha256Hex(text: string): string {
  return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

export function seedCommitment(seed: string): string {
  return sha256Hex(seed);
}

/** The draw key of one member in the whole-order draw (tontines started with `draw_per_cycle` false). */
export function drawKey(seed: string, userId: string): string {
  return sha256Hex(`${seed}:${userId.toLowerCase()}`);
}

/** User ids in payout order (cycle 1 first): the whole-order draw (tontines started with `draw_per_cycle` false). */
export function drawOrder(seed: string, userIds: readonly string[]): string[] {
  return userIds
    .map((userId) => ({ userId, key: drawKey(seed, userId) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((entry) => entry.userId);
}

/** The draw key of one member for cycle `cycle`; the smallest among those still waiting wins. */
export function cycleDrawKey(seed: string, cycle: number, userId: string): string {
  return sha256Hex(`${seed}:${cycle}:${userId.toLowerCase()}`);
}

/** The beneficiary of cycle `cycle`, drawn among the members who have not received a pot yet. */
export function drawBeneficiary(seed: string, cycle: number, waitingUserIds: readonly string[]): string {
  let best: { userId: string; key: string } | undefined;
  for (const userId of waitingUserIds) {
    const key = cycleDrawKey(seed, cycle, userId);
    if (!best || key < best.key) best = { userId, key };
  }
  if (!best) throw new RangeError(`no member left to draw for cycle ${cycle}`);
  return best.userId;
}
