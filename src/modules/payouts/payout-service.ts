import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../clock';
import { ConflictError, DomainError, NotFoundError, ValidationError } from '../../errors';
import { checkIban } from '../../iban';
import { withTransaction } from '../../db/transaction';
import { readConnection } from '../../db/read-routing';
import type { PageRequest } from '../../db/keyset';
import { currencies, parseAmount, toBigInt } from '../ledger';
import { applyDecision, isLedgerRefusal, type DecidedEvent } from '../writes';
import type { ResourceStatusReader } from '../idempotency';
import type { RailInstructionService } from '../rail-instructions';
import type { PayoutRail } from './payout-rail';
import { presentPayout, PayoutRepository, toInsert, type PayoutView } from './payout-repository';
import {
  approvalThresholds,
  checkAction,
  DEFAULT_APPROVAL_THRESHOLD_XOF,
  OrganizationNotVerifiedError,
  requiresApproval,
  reservePosting,
  settlementPosting,
  type Payout,
  type PayoutDestination,
  type PayoutStatus,
} from './payout-plan';

export interface PayoutServiceDeps {
  knex: Knex;
  rail: PayoutRail;
  /** Where the submission to the rail is delivered from: recorded when the payout goes processing, retried until the rail answers. */
  instructions: RailInstructionService;
  clock: Clock;
  logger?: Pick<Logger, 'error'>;
}

export interface PayoutRequest {
  account_id: string;
  amount: number | string;
  destination: PayoutDestination;
  reference?: string;
}

export class PayoutNotFoundError extends NotFoundError {
  constructor() {
    super('No payout of this organisation has this id.', 'PayoutNotFound');
  }
}

/** The status a payout's Idempotency-Key reports on a replay: the payout's own, read now. */
export const payoutStatusOf: ResourceStatusReader = (db, id) => new PayoutRepository(db).statusOf(id);

export function payoutResource(payout: Pick<Payout, 'id' | 'organizationId' | 'status'>) {
  return { type: 'payout', id: payout.id, status: payout.status, location: `/api/business/organizations/${payout.organizationId}/payouts/${payout.id}` };
}

function payoutEvent(payout: Payout, view: PayoutView, type: string, actorUserId: string | null, previousStatus: PayoutStatus | null, now: Date): DecidedEvent {
  return {
    subjectType: 'payout',
    subjectId: payout.id,
    type,
    actorUserId,
    payload: { account_id: payout.accountId, amount_minor: payout.amountMinor.toString(), currency: payout.currency, status: payout.status },
    occurredAt: now,
    organizationId: payout.organizationId,
    object: view,
    previousStatus,
  };
}

/** The destination as stored: an IBAN checked and compacted; a wallet as given. */
function destinationOf(destination: PayoutDestination): PayoutDestination {
  if (destination.type !== 'bank_account') return { type: 'mobile_money', provider: destination.provider, msisdn: destination.msisdn };
  const iban = checkIban(destination.iban);
  if (!iban.valid) throw ValidationError.field('body.destination.iban', iban.reason);
  return { type: 'bank_account', iban: iban.iban, holder_name: destination.holder_name };
}

/**
 * Payouts of organisations, on the one write path. A payout is decided under its account's
 * lock and reserves its amount at once (the ledger refuses it when the account does not hold
 * it: 409 InsufficientFunds; or when the organisation's limits do not allow it: 409
 * LimitExceeded). Below the approval threshold it goes to the rail once committed; at or above
 * it waits for an owner or admin other than its requester. The rail's outcome settles it once
 * (`paid`: out to clearing; `failed`: the money returns to the account), as a cancel does.
 */
export class PayoutService {
  constructor(private readonly deps: PayoutServiceDeps) {}

  /** POST .../payouts, in the pipeline's transaction; `pay` is for after its commit. */
  async create(trx: Knex.Transaction, organizationId: string, input: PayoutRequest, actorUserId: string | null) {
    const account = await new PayoutRepository(trx).readAccount(trx, organizationId, input.account_id);
    if (!account) throw new NotFoundError('No account of this organisation has this id.', 'AccountNotFound');
    if (account.verification_status !== 'verified') throw new OrganizationNotVerifiedError();
    const exponent = Number(account.exponent);
    const amountMinor = parseAmount(input.amount, exponent, { field: 'body.amount' });
    const currency = account.currency.trim();
    const thresholdXof = account.payout_approval_threshold_xof === null ? DEFAULT_APPROVAL_THRESHOLD_XOF : toBigInt(account.payout_approval_threshold_xof);
    const approval = requiresApproval(amountMinor, currency, thresholdXof);
    const now = this.deps.clock();
    const payout: Payout = {
      id: crypto.randomUUID(),
      organizationId,
      accountId: account.account_id,
      ledgerAccountId: account.ledger_account_id,
      currency,
      amountMinor,
      destination: destinationOf(input.destination),
      reference: input.reference ?? null,
      status: approval ? 'pending_approval' : 'processing',
      requiresApproval: approval,
      failureCode: null,
      requestedByUserId: actorUserId,
      approvedByUserId: null,
      settledAt: null,
      createdAt: now,
      updatedAt: now,
    };
    const view = presentPayout(payout, exponent);
    try {
      await applyDecision(trx, {
        postings: [reservePosting(payout)],
        changes: [{ table: 'payouts', op: 'insert', id: payout.id, set: toInsert(payout), postingIds: { hold_posting_id: 0 } }],
        events: [payoutEvent(payout, view, 'payout.created', actorUserId, null, now)],
        answer: { resource: payoutResource(payout), status: 201 },
      });
    } catch (error) {
      throw refusalOf(error);
    }
    return { payout, view, pay: () => (payout.status === 'processing' ? this.pay(payout, exponent) : Promise.resolve(view)) };
  }

  /** POST .../payouts/{payoutId}/approve, in the pipeline's transaction: `processing`; `pay` is for after its commit. */
  async approve(trx: Knex.Transaction, organizationId: string, payoutId: string, actorUserId: string | null) {
    const { payout: before, exponent } = await this.lockOf(trx, organizationId, payoutId);
    checkAction(before, 'approve', actorUserId);
    const now = this.deps.clock();
    const payout: Payout = { ...before, status: 'processing', approvedByUserId: actorUserId, updatedAt: now };
    const view = presentPayout(payout, exponent);
    await applyDecision(trx, {
      changes: [{ table: 'payouts', id: payout.id, expect: { status: 'pending_approval' }, set: { status: 'processing', approved_by_user_id: actorUserId, updated_at: now.toISOString() } }],
      events: [payoutEvent(payout, view, 'payout.approved', actorUserId, before.status, now)],
      answer: { resource: payoutResource(payout) },
    });
    return { payout, view, pay: () => this.pay(payout, exponent) };
  }

  /** POST .../payouts/{payoutId}/cancel, in the pipeline's transaction: `canceled`, the money back in the account. */
  async cancel(trx: Knex.Transaction, organizationId: string, payoutId: string, actorUserId: string | null) {
    const { payout: before, exponent } = await this.lockOf(trx, organizationId, payoutId);
    checkAction(before, 'cancel', actorUserId);
    const view = await this.decideOutcome(trx, before, exponent, { status: 'canceled' }, actorUserId);
    return { payout: { ...before, status: 'canceled' as const }, view };
  }

  /** GET .../payouts: a page, newest first. */
  async list(organizationId: string, filter: PageRequest & { status?: PayoutStatus }): Promise<PayoutView[]> {
    const db = readConnection(this.deps.knex);
    return this.presentAll(db, await new PayoutRepository(db).list(organizationId, filter));
  }

  /** GET .../payouts/{payoutId}. */
  async get(organizationId: string, payoutId: string): Promise<PayoutView> {
    const db = readConnection(this.deps.knex);
    const payout = await new PayoutRepository(db).find(organizationId, payoutId);
    if (!payout) throw new PayoutNotFoundError();
    return (await this.presentAll(db, [payout]))[0] as PayoutView;
  }

  /** The payout settings: the threshold set in XOF and its equivalent in each currency. */
  async settings(organizationId: string, db: Knex | Knex.Transaction = readConnection(this.deps.knex)) {
    const thresholdXof = (await new PayoutRepository(db).thresholdXof(organizationId)) ?? DEFAULT_APPROVAL_THRESHOLD_XOF;
    return { object: 'payout_settings' as const, approval_threshold_xof: Number(thresholdXof), approval_thresholds: approvalThresholds(thresholdXof) };
  }

  /** PATCH .../payout-settings (the owner). */
  async updateSettings(organizationId: string, thresholdXof: number) {
    return withTransaction(this.deps.knex, async (trx) => {
      await new PayoutRepository(trx).setThresholdXof(organizationId, BigInt(thresholdXof));
      return this.settings(organizationId, trx);
    });
  }

  /** Settles a processing payout once with the rail's outcome; a settled one is answered as it is. */
  async settle(payoutId: string, outcome: { status: 'paid' } | { status: 'failed'; failureCode: string }): Promise<PayoutView> {
    return withTransaction(this.deps.knex, async (trx) => {
      const locked = await new PayoutRepository(trx).lock(trx, null, payoutId);
      if (!locked) throw new PayoutNotFoundError();
      const { payout, exponent } = locked;
      if (payout.status !== 'processing') return presentPayout(payout, exponent);
      return this.decideOutcome(trx, payout, exponent, outcome, null);
    });
  }

  /** The one settlement of a payout: its posting, its row, its event. */
  private async decideOutcome(
    trx: Knex.Transaction,
    before: Payout,
    exponent: number,
    outcome: { status: 'paid' | 'canceled' } | { status: 'failed'; failureCode: string },
    actorUserId: string | null,
  ): Promise<PayoutView> {
    const now = this.deps.clock();
    const failureCode = outcome.status === 'failed' ? outcome.failureCode : null;
    const after: Payout = { ...before, status: outcome.status, failureCode, settledAt: now, updatedAt: now };
    const view = presentPayout(after, exponent);
    await applyDecision(trx, {
      postings: [settlementPosting(before, outcome.status)],
      changes: [
        {
          table: 'payouts',
          id: before.id,
          expect: { status: before.status },
          set: { status: after.status, failure_code: failureCode, settled_at: now.toISOString(), updated_at: now.toISOString() },
          postingIds: { settlement_posting_id: 0 },
        },
      ],
      events: [payoutEvent(after, view, `payout.${outcome.status}`, actorUserId, before.status, now)],
      answer: { resource: payoutResource(after) },
    });
    return view;
  }

  private async lockOf(trx: Knex.Transaction, organizationId: string, payoutId: string) {
    const locked = await new PayoutRepository(trx).lock(trx, organizationId, payoutId);
    if (!locked) throw new PayoutNotFoundError();
    return locked;
  }

  /**
   * Right after the commit that made the payout processing: its submission to the rail (recorded
   * with that change) is attempted at once; a rail that cannot answer leaves it processing, and
   * the job tries again.
   */
  private async pay(payout: Payout, exponent: number): Promise<PayoutView> {
    await this.deps.instructions.deliverFirst('payout.submit', payout.id);
    return presentPayout((await new PayoutRepository(this.deps.knex).findById(payout.id)) ?? payout, exponent);
  }

  /**
   * The delivery of a payout's submission: the rail pays it out (idempotent on the payout's id,
   * so a repeated attempt never pays twice), then its answer settles the payout once. A payout
   * no longer processing needs nothing more.
   */
  async submit(payoutId: string): Promise<void> {
    const payout = await new PayoutRepository(this.deps.knex).findById(payoutId);
    if (!payout || payout.status !== 'processing') return;
    const outcome = await this.deps.rail.pay({ payoutId: payout.id, currency: payout.currency, amountMinor: payout.amountMinor, destination: payout.destination });
    await this.settle(payout.id, outcome);
  }

  private async presentAll(db: Knex | Knex.Transaction, payouts: readonly Payout[]): Promise<PayoutView[]> {
    const views: PayoutView[] = [];
    for (const payout of payouts) views.push(presentPayout(payout, (await currencies.require(db, payout.currency)).exponent));
    return views;
  }
}

/** The ledger's refusal of a payout's reserve, in the payout's words: the account does not hold the amount (409). */
function refusalOf(error: unknown): unknown {
  if (isLedgerRefusal(error) && error instanceof DomainError && error.code === 'InsufficientFunds') {
    return new ConflictError('InsufficientFunds', 'The account does not hold the amount of this payout.', error.details);
  }
  return error;
}
