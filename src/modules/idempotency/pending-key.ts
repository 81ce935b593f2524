import type { Knex } from 'knex';
import type { WindowKey } from '../../contract';
import type { IdempotencyScope } from './idempotency-repository';

/** A claimed key: its row and the token that fences its completion. */
export interface ClaimedKey {
  id: string;
  claimToken: string;
}

/** What the first try at a claim found (write_claim's answer). */
export interface ClaimAttempt {
  held: boolean;
  claimed?: ClaimedKey;
}

/**
 * The Idempotency-Key of a request whose operation claims it in the statement that reads what
 * its decision needs, and completes it in the statement that applies the decision (the one write
 * path: src/modules/writes/write-path.ts). The pipeline (IdempotencyService) hands it over with
 * the request's transaction; the rules of the key stay the pipeline's: a first try that claims
 * nothing (a replay, a reuse, a key held right now, one to take over) is settled by the
 * pipeline's own claim (`settle`), which throws the answer or claims the key.
 */
export class PendingKey implements WindowKey {
  claimed: ClaimedKey | undefined;
  /** The response the key was completed with, by the statement that applied the decision. */
  completedWith: { responseStatus: number; resourceType: string; resourceId: string; resourceStatus: string } | undefined;

  constructor(
    readonly scope: IdempotencyScope,
    readonly requestHash: string,
    readonly claimToken: string,
    readonly terms: { leaseSeconds: number; ttlHours: number },
    /** The status the operation answers with unless it says otherwise. */
    readonly responseStatus: number,
    private readonly settleWith: (trx: Knex.Transaction, first: ClaimAttempt) => Promise<ClaimedKey>,
  ) {}

  /** write_claim's arguments (p_user_id ... p_ttl_hours). */
  claimArguments(): unknown[] {
    const organizationId = this.scope.organizationId ?? null;
    return [organizationId ? null : this.scope.userId, organizationId, this.scope.operation, this.scope.key, this.requestHash, this.claimToken, this.terms.leaseSeconds, this.terms.ttlHours];
  }

  /** After the read: the key claimed there, or the pipeline's answer to a key that was not (thrown), or the key claimed by it. */
  async settle(trx: Knex.Transaction, first: ClaimAttempt): Promise<void> {
    this.claimed = first.claimed ?? (await this.settleWith(trx, first));
  }
}

const pending = new WeakMap<Knex.Transaction, PendingKey>();

/** The key the pipeline handed over with `trx`, still to be claimed by the operation's read. */
export function pendingKeyOf(trx: Knex.Transaction): PendingKey | undefined {
  return pending.get(trx);
}

/** Hands `key` over with `trx` while `work` runs. */
export async function withPendingKey<T>(trx: Knex.Transaction, key: PendingKey, work: () => Promise<T>): Promise<T> {
  pending.set(trx, key);
  try {
    return await work();
  } finally {
    pending.delete(trx);
  }
}

/** The arguments of write_claim when no key comes with the request: it claims nothing. */
export const NO_KEY_ARGUMENTS: readonly unknown[] = [null, null, null, null, null, null, null, null];
