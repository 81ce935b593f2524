import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../clock';
import { ConflictError, DomainError, NotFoundError } from '../../errors';
import { withTransaction } from '../../db/transaction';
import { readConnection } from '../../db/read-routing';
import { currencies, parseAmount, toBigInt } from '../ledger';
import { applyDecision, isLedgerRefusal, type DecidedEvent } from '../writes';
import type { ResourceStatusReader } from '../idempotency';
import type { RailInstructionService } from '../rail-instructions';
import type { RefundRail } from './refund-rail';
import { presentRefund, RefundRepository, toInsert, type RefundView } from './refund-repository';
import { holdPosting, PaymentNotRefundableError, refundAmount, settlementPosting, type Refund, type RefundReason } from './refund-settlement';

export interface RefundServiceDeps {
  knex: Knex;
  rail: RefundRail;
  /** Where the submission to the rail is delivered from: recorded with the refund, retried until the rail answers. */
  instructions: RailInstructionService;
  clock: Clock;
  /** The payment as the API returns it, read in the caller's transaction. */
  paymentView: (db: Knex | Knex.Transaction, organizationId: string, paymentId: string) => Promise<Record<string, unknown> | undefined>;
  logger?: Pick<Logger, 'error'>;
}

export class PaymentNotFoundError extends NotFoundError {
  constructor() {
    super('No payment of this organisation has this id.', 'PaymentNotFound');
  }
}

/** The status a refund's Idempotency-Key reports on a replay: the refund's own, read now. */
export const refundStatusOf: ResourceStatusReader = (db, id) => new RefundRepository(db).statusOf(id);

export function refundResource(refund: Refund) {
  return { type: 'refund', id: refund.id, status: refund.status, location: `/api/business/organizations/${refund.organizationId}/payments/${refund.paymentId}/refunds` };
}

/** A payment with what was refunded of it: the amount its pending and succeeded refunds took, and the refunds, newest first. */
export function withRefunds<P extends { amount_minor: string }>(payment: P, refunds: readonly RefundView[]) {
  const refunded = refunds.filter((refund) => refund.status !== 'failed').reduce((sum, refund) => sum + BigInt(refund.amount_minor), 0n);
  return { ...payment, amount_refunded_minor: refunded.toString(), refunds: [...refunds] };
}

/**
 * Refunds of payments, on the one write path. A refund is decided under the payment's lock
 * (its read sums the payment's refunds so far, so refunds of one payment never add up to more
 * than it) and holds its amount at once (the ledger refuses it when the account the payment
 * credited no longer has it: 409 InsufficientFunds). Once committed, the rail pays the customer
 * back; its outcome settles the refund once (`succeeded`: out to clearing; `failed`: the money
 * returns to the account).
 */
export class RefundService {
  constructor(private readonly deps: RefundServiceDeps) {}

  /** POST .../payments/{paymentId}/refunds, in the pipeline's transaction; `settle` is for after its commit. */
  async create(trx: Knex.Transaction, organizationId: string, paymentId: string, input: { amount?: number | string; reason: RefundReason }, actorUserId: string | null) {
    const repository = new RefundRepository(trx);
    const payment = await repository.readPayment(trx, organizationId, paymentId);
    if (!payment) throw new PaymentNotFoundError();
    if (payment.status !== 'succeeded' || !payment.credited_account_id) throw new PaymentNotRefundableError(payment.status);
    const exponent = Number(payment.exponent);
    const requested = input.amount === undefined ? undefined : parseAmount(input.amount, exponent, { field: 'body.amount' });
    const amountMinor = refundAmount(toBigInt(payment.amount_minor), toBigInt(payment.refunded_minor), requested);
    const now = this.deps.clock();
    const refund: Refund = {
      id: crypto.randomUUID(),
      organizationId,
      paymentId,
      accountId: payment.credited_account_id,
      currency: payment.currency.trim(),
      amountMinor,
      reason: input.reason,
      status: 'pending',
      failureCode: null,
      requestedByUserId: actorUserId,
      holdPostingId: null,
      settlementPostingId: null,
      settledAt: null,
      createdAt: now,
      updatedAt: now,
    };
    const view = presentRefund(refund, exponent);
    const before = (await repository.ofPayments([paymentId])).map((one) => presentRefund(one, exponent));
    const paymentObject = withRefunds((await this.deps.paymentView(trx, organizationId, paymentId)) as { amount_minor: string }, [view, ...before]);
    const event: DecidedEvent = {
      subjectType: 'payment',
      subjectId: paymentId,
      type: 'payment.refunded',
      actorUserId,
      payload: { refund_id: refund.id, amount_minor: amountMinor.toString(), currency: refund.currency, reason: refund.reason },
      occurredAt: now,
      organizationId,
      object: paymentObject,
      previousStatus: payment.status,
    };
    try {
      await applyDecision(trx, {
        postings: [holdPosting(refund)],
        changes: [{ table: 'refunds', op: 'insert', id: refund.id, set: toInsert(refund), postingIds: { hold_posting_id: 0 } }],
        events: [event],
        answer: { resource: refundResource(refund), status: 201 },
      });
    } catch (error) {
      throw refusalOf(error);
    }
    return { refund, view, settle: () => this.pay(refund) };
  }

  /** GET .../payments/{paymentId}/refunds: the payment's refunds, newest first. */
  async list(organizationId: string, paymentId: string): Promise<RefundView[]> {
    const db = readConnection(this.deps.knex);
    const payment = (await db('payments').where({ id: paymentId, organization_id: organizationId }).first('currency')) as { currency: string } | undefined;
    if (!payment) throw new PaymentNotFoundError();
    const { exponent } = await currencies.require(db, payment.currency.trim());
    return (await new RefundRepository(db).ofPayments([paymentId])).map((refund) => presentRefund(refund, exponent));
  }

  /** The refunds of some payments, presented, by payment id (what the payments show). */
  async ofPayments(payments: ReadonlyArray<{ id: string }>): Promise<Map<string, RefundView[]>> {
    const db = readConnection(this.deps.knex);
    const found = new Map<string, RefundView[]>(payments.map((payment) => [payment.id, []]));
    for (const refund of await new RefundRepository(db).ofPayments(payments.map((payment) => payment.id))) {
      const { exponent } = await currencies.require(db, refund.currency);
      found.get(refund.paymentId)?.push(presentRefund(refund, exponent));
    }
    return found;
  }

  /**
   * Right after the refund's commit: its submission to the rail (recorded with it) is attempted
   * at once; a rail that cannot answer leaves it pending, and the job tries again.
   */
  private async pay(refund: Refund): Promise<RefundView> {
    await this.deps.instructions.deliverFirst('refund.submit', refund.id);
    const current = (await new RefundRepository(this.deps.knex).findById(refund.id)) ?? refund;
    const { exponent } = await currencies.require(this.deps.knex, current.currency);
    return presentRefund(current, exponent);
  }

  /**
   * The delivery of a refund's submission: the rail pays it back (idempotent on the refund's id,
   * so a repeated attempt never pays twice), then its answer settles the refund once. A refund
   * settled already needs nothing more.
   */
  async submit(refundId: string): Promise<void> {
    const refund = await new RefundRepository(this.deps.knex).findById(refundId);
    if (!refund || refund.status !== 'pending') return;
    const outcome = await this.deps.rail.refund({ refundId: refund.id, paymentId: refund.paymentId, currency: refund.currency, amountMinor: refund.amountMinor });
    await this.settle(refund.id, outcome.status === 'succeeded' ? { status: 'succeeded' } : outcome);
  }

  /** Settles a pending refund once with the rail's outcome; a settled one is answered as it is. */
  async settle(refundId: string, outcome: { status: 'succeeded' } | { status: 'failed'; failureCode: string }): Promise<RefundView> {
    return withTransaction(this.deps.knex, async (trx) => {
      const locked = await new RefundRepository(trx).lock(trx, refundId);
      if (!locked) throw new NotFoundError('No refund has this id.', 'RefundNotFound');
      const { refund, exponent } = locked;
      if (refund.status !== 'pending') return presentRefund(refund, exponent);
      const now = this.deps.clock();
      const after: Refund = { ...refund, status: outcome.status, failureCode: outcome.status === 'failed' ? outcome.failureCode : null, settledAt: now, updatedAt: now };
      const view = presentRefund(after, exponent);
      await applyDecision(trx, {
        postings: [settlementPosting(refund, outcome.status)],
        changes: [
          {
            table: 'refunds',
            id: refund.id,
            expect: { status: 'pending' },
            set: { status: after.status, failure_code: after.failureCode, settled_at: now.toISOString(), updated_at: now.toISOString() },
            postingIds: { settlement_posting_id: 0 },
          },
        ],
        events: [{ subjectType: 'refund', subjectId: refund.id, type: `refund.${outcome.status}`, actorUserId: null, payload: { payment_id: refund.paymentId, amount_minor: refund.amountMinor.toString() }, occurredAt: now, organizationId: refund.organizationId, object: view, previousStatus: 'pending' }],
        answer: { resource: refundResource(after) },
      });
      return view;
    });
  }
}

/** The ledger's refusal of a refund's hold, in the refund's words: the account no longer holds the amount (409). */
function refusalOf(error: unknown): unknown {
  if (isLedgerRefusal(error) && error instanceof DomainError && error.code === 'InsufficientFunds') {
    return new ConflictError('InsufficientFunds', 'The account the payment credited no longer holds the amount of this refund.', error.details);
  }
  return error;
}
