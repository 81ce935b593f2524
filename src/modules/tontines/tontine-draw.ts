import crypto from 'node:crypto';

/**
 * The auditable payout draw (commit-reveal), exactly as the contract documents it under
 * `draw_seed`: a secret seed of 32 random bytes, written as 64 lower-case hex characters; its
 * commitment hex(SHA-256(seed)) is published when the tontine is created and the seed itself
 * when it starts; the order sorts members by hex(SHA-256(seed + ':' + user_id)) ascending.
 * Members cannot steer the order (they join before the seed is known) and the platform
 * cannot either (the commitment binds it to the seed before anyone joins).
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

/** The draw key of one member; the member with the smallest key receives cycle 1. */
export function drawKey(seed: string, userId: string): string {
  return sha256Hex(`${seed}:${userId.toLowerCase()}`);
}

/** User ids in payout order (cycle 1 first) for a random tontine. */
export function drawOrder(seed: string, userIds: readonly string[]): string[] {
  return userIds
    .map((userId) => ({ userId, key: drawKey(seed, userId) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((entry) => entry.userId);
}
