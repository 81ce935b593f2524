import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Caller, components } from '../../contract';
import type { Clock } from '../../clock';
import { ConflictError, ForbiddenError, NotFoundError } from '../../errors';
import { withTransaction } from '../../db/transaction';
import { readConnection } from '../../db/read-routing';
import { toPage, type Page, type PageRequest } from '../../db/keyset';
import { currencies, formatMinor } from '../ledger';
import { nextAttemptAfter, type HeldPayout, type HeldPayoutStatus, type HeldPayoutSubject } from './held-payout';
import { HeldPayoutRepository } from './held-payout-repository';

export type HeldPayoutView = components['schemas']['HeldPayout'];

/** What the area of a held payout (escrows, tontines) does with it, under the lock of its object. */
export interface PayoutSubject {
  /** Completes it (the job), or notes one more attempt when the recipient's limits still refuse it: whether it completed. */
  completeHeldPayout(db: Knex | Knex.Transaction, held: HeldPayout): Promise<boolean>;
  /** Returns it to its payer, by `caller` (an administrator); `current` reads it again once the object is locked. */
  returnHeldPayout(trx: Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, held: HeldPayout, reason: string, current: () => Promise<HeldPayout>): Promise<void>;
}

export interface HeldPayoutServiceDeps {
  knex: Knex;
  clock: Clock;
  logger?: Pick<Logger, 'warn'>;
  subjects: Readonly<Record<HeldPayoutSubject, PayoutSubject>>;
}

/** 404 HeldPayoutNotFound. */
class HeldPayoutNotFoundError extends NotFoundError {
  constructor() {
    super('No held payout has this id.', 'HeldPayoutNotFound');
  }
}

/**
 * Payouts held for verification (see held-payout.ts): the job that completes them once their
 * recipients' limits allow, and an administrator's return of one to its payer. Each runs on
 * the one write path of its object's area (escrows, tontines), under that object's lock.
 */
export class HeldPayoutService {
  constructor(private readonly deps: HeldPayoutServiceDeps) {}

  /**
   * The job: tries each held payout whose attempt is due, one transaction each, up to
   * `batchSize`; answers how many completed. One still refused is tried again later, backing
   * off (nextAttemptAfter); one that fails otherwise (a frozen wallet) too, and is logged.
   */
  async completeDue(options: { batchSize: number }): Promise<number> {
    const now = this.deps.clock();
    let completed = 0;
    for (const held of await new HeldPayoutRepository(this.deps.knex).due(now, options.batchSize)) {
      try {
        if (await this.deps.subjects[held.subjectType].completeHeldPayout(this.deps.knex, held)) completed += 1;
      } catch (error) {
        this.deps.logger?.warn({ err: error, heldPayoutId: held.id }, 'a held payout could not be completed; it is tried again later');
        await new HeldPayoutRepository(this.deps.knex).postpone(held, nextAttemptAfter(held.attempts + 1, now));
      }
    }
    return completed;
  }

  /** GET /admin/held-payouts: every held payout, the most recently held first; administrators only. */
  async list(caller: Pick<Caller, 'isAdmin'>, options: PageRequest & { status?: HeldPayoutStatus }): Promise<Page<HeldPayoutView>> {
    if (!caller.isAdmin) throw new ForbiddenError('InsufficientRole', 'Only platform administrators may list held payouts.');
    const db = readConnection(this.deps.knex);
    const page = toPage(await new HeldPayoutRepository(db).page({ status: options.status }, options), options.limit);
    return { ...page, data: await Promise.all(page.data.map((held) => this.present(db, held))) };
  }

  /** POST /admin/held-payouts/{heldPayoutId}/return, in the pipeline's transaction. */
  async returnToPayer(trx: Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, id: string, reason: string): Promise<HeldPayoutView> {
    if (!caller.isAdmin) throw new ForbiddenError('InsufficientRole', 'Only platform administrators may return a held payout.');
    const repository = new HeldPayoutRepository(trx);
    const held = await repository.find(id);
    if (!held) throw new HeldPayoutNotFoundError();
    const current = async (): Promise<HeldPayout> => {
      const now = await repository.find(id);
      if (!now) throw new HeldPayoutNotFoundError();
      if (now.status !== 'held_for_verification') throw new ConflictError('HeldPayoutNotHeld', `This payout is no longer held (${now.status}).`);
      return now;
    };
    await withTransaction(trx, (inner) => this.deps.subjects[held.subjectType].returnHeldPayout(inner, caller, held, reason, current));
    return this.present(trx, (await repository.find(id)) as HeldPayout);
  }

  private async present(db: Knex | Knex.Transaction, held: HeldPayout): Promise<HeldPayoutView> {
    const { exponent } = await currencies.require(db, held.currency);
    return {
      id: held.id,
      object: 'held_payout',
      subject_type: held.subjectType,
      subject_id: held.subjectId,
      cycle: held.cycleNumber,
      recipient_user_id: held.recipientUserId,
      amount: formatMinor(held.amountMinor, exponent),
      amount_minor: held.amountMinor.toString(),
      currency: held.currency,
      status: held.status,
      reason: held.reason,
      held_at: held.heldAt.toISOString(),
      settled_at: held.settledAt?.toISOString() ?? null,
      return_reason: held.returnReason,
    };
  }
}

/** What a returned held payout's Idempotency-Key records. */
export function heldPayoutResource(view: Pick<HeldPayoutView, 'id' | 'status'>): { type: 'held_payout'; id: string; status: string; location: string } {
  return { type: 'held_payout', id: view.id, status: view.status, location: `/api/admin/held-payouts/${view.id}` };
}
