/**
 * What a rail must be told once a change of state has committed (pure rules): a top-up's
 * collection asked of its payer, a reversed
 * top-up's collection paid back to its payer, a refund paid back to the customer, a payout paid
 * out. The row is recorded by a trigger in the transaction of the change (see the migration
 * 20261130110000_rail_instructions), so it survives the process dying right after the commit.
 * Each instruction is delivered by its area's deliverer, which names the subject to the rail by
 * the subject's own stable reference (the top-up's provider reference, the refund's id, the
 * payout's id): the rails are idempotent on it, so an attempt repeated after a crash never pays
 * twice, and a deliverer finding its subject already settled does nothing.
 */

export const RAIL_INSTRUCTION_KINDS = ['top_up.request', 'top_up.give_back', 'refund.submit', 'payout.submit'] as const;
export type RailInstructionKind = (typeof RAIL_INSTRUCTION_KINDS)[number];

export interface RailInstruction {
  id: string;
  kind: RailInstructionKind;
  subjectId: string;
  status: 'pending' | 'delivered';
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
}

/** Delivers one instruction to its rail (and settles its subject with the answer); throws to be retried. */
export type RailDeliverer = (subjectId: string) => Promise<void>;

/** The wait after the first attempt; it doubles with each attempt. */
export const FIRST_RETRY_AFTER_MS = 30_000;
/** The longest wait between two attempts. */
export const LONGEST_RETRY_AFTER_MS = 3_600_000;

/**
 * When the `attempts`-th attempt (1 for the first) may be followed by another: it is also the
 * lease of the attempt under way, so an attempt whose process died is tried again then.
 */
export function retryAfterMs(attempts: number): number {
  return Math.min(FIRST_RETRY_AFTER_MS * 2 ** Math.min(Math.max(attempts - 1, 0), 20), LONGEST_RETRY_AFTER_MS);
}
