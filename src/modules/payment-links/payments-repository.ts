import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import { currencies, toBigInt } from '../ledger';
import type { Payment, PaymentMethod, PaymentStatus } from './payment-links-types';

type Db = Knex | Knex.Transaction;

interface PaymentRow {
  id: string;
  organization_id: string;
  link_id: string;
  one_off: boolean;
  destination_account_id: string;
  currency: string;
  amount_minor: string;
  reference: string | null;
  customer_reference: string | null;
  method: PaymentMethod;
  payer_last4: string;
  status: PaymentStatus;
  failure_reason: string | null;
  sandbox_outcome: string;
  settle_after: Date;
  form_nonce: string;
  posting_id: string | null;
  completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

function toPayment(row: PaymentRow & { exponent: number }): Payment {
  return {
    id: row.id,
    organizationId: row.organization_id,
    linkId: row.link_id,
    oneOff: row.one_off,
    destinationAccountId: row.destination_account_id,
    currency: row.currency.trim(),
    exponent: row.exponent,
    amountMinor: toBigInt(row.amount_minor),
    reference: row.reference,
    customerReference: row.customer_reference,
    method: row.method,
    payerLast4: row.payer_last4,
    status: row.status,
    failureReason: row.failure_reason,
    sandboxOutcome: row.sandbox_outcome,
    settleAfter: row.settle_after,
    formNonce: row.form_nonce,
    postingId: row.posting_id,
    completedAt: row.completed_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function selectPayments(db: Db): Knex.QueryBuilder {
  return db('payments as p').select('p.*');
}

/** Payments as stored, each with its currency's exponent (the ledger's reference data). */
async function toPayments(db: Db, rows: readonly PaymentRow[]): Promise<Payment[]> {
  return (await currencies.withExponents(db, rows)).map(toPayment);
}

export interface NewPayment {
  organizationId: string;
  linkId: string;
  oneOff: boolean;
  destinationAccountId: string;
  currency: string;
  amountMinor: bigint;
  reference: string | null;
  customerReference: string | null;
  method: PaymentMethod;
  payerLast4: string;
  sandboxOutcome: string;
  settleAfter: Date;
  formNonce: string;
}

export interface ListPaymentsFilter extends PageRequest {
  linkId?: string;
  reference?: string;
  status?: PaymentStatus;
}

const PAYMENTS = new Keyset({ table: 'payments', alias: 'p', noun: 'a payment of this organisation' });

/** Knex queries of the payments made on payment links. */
export class PaymentsRepository {
  constructor(private readonly db: Db) {}

  async insert(payment: NewPayment): Promise<string> {
    const [row] = (await this.db('payments')
      .insert({
        organization_id: payment.organizationId,
        link_id: payment.linkId,
        one_off: payment.oneOff,
        destination_account_id: payment.destinationAccountId,
        currency: payment.currency,
        amount_minor: payment.amountMinor.toString(),
        reference: payment.reference,
        customer_reference: payment.customerReference,
        method: payment.method,
        payer_last4: payment.payerLast4,
        sandbox_outcome: payment.sandboxOutcome,
        settle_after: payment.settleAfter,
        form_nonce: payment.formNonce,
      })
      .returning('id')) as Array<{ id: string }>;
    return (row as { id: string }).id;
  }

  async findByNonce(linkId: string, formNonce: string): Promise<Payment | undefined> {
    return this.findOne(selectPayments(this.db).where({ 'p.link_id': linkId, 'p.form_nonce': formNonce }));
  }

  async findById(paymentId: string, options: { organizationId?: string; linkId?: string; forUpdate?: boolean } = {}): Promise<Payment | undefined> {
    if (options.forUpdate) await this.db('payments').where({ id: paymentId }).forUpdate().first('id');
    const query = selectPayments(this.db).where('p.id', paymentId);
    if (options.organizationId) query.andWhere('p.organization_id', options.organizationId);
    if (options.linkId) query.andWhere('p.link_id', options.linkId);
    return this.findOne(query);
  }

  /** The payment of a one-off link that is pending or succeeded, if any. */
  async findOpenForLink(linkId: string): Promise<Payment | undefined> {
    return this.findOne(selectPayments(this.db).where('p.link_id', linkId).whereIn('p.status', ['pending', 'succeeded']));
  }

  /** The payment of an order (link and reference) that is pending or succeeded, if any. */
  async findOpenForReference(linkId: string, reference: string): Promise<Payment | undefined> {
    return this.findOne(selectPayments(this.db).where({ 'p.link_id': linkId, 'p.reference': reference }).whereIn('p.status', ['pending', 'succeeded']));
  }

  private async findOne(query: Knex.QueryBuilder): Promise<Payment | undefined> {
    const row = (await query.first()) as PaymentRow | undefined;
    return row ? (await toPayments(this.db, [row]))[0] : undefined;
  }

  /** Newest first, `limit + 1` rows; 400 when the cursor is not one of the organisation's payments. */
  async list(organizationId: string, filter: ListPaymentsFilter): Promise<Payment[]> {
    const query = selectPayments(this.db).where('p.organization_id', organizationId);
    if (filter.linkId) query.andWhere('p.link_id', filter.linkId);
    if (filter.reference !== undefined) query.andWhere('p.reference', filter.reference);
    if (filter.status) query.andWhere('p.status', filter.status);
    return toPayments(this.db, await PAYMENTS.rows<PaymentRow>(this.db, query, { organization_id: organizationId }, filter));
  }

  /**
   * Locks the pending payment whose sandbox decision is due first, skipping rows another
   * transaction holds (FOR UPDATE SKIP LOCKED): instances sweeping at once each take a
   * different payment and never wait for each other. Call inside the settling transaction.
   */
  async lockNextDue(now: Date): Promise<string | undefined> {
    const row = (await this.db('payments')
      .where('status', 'pending')
      .andWhere('settle_after', '<=', now)
      .orderBy('settle_after')
      .orderBy('id')
      .forUpdate()
      .skipLocked()
      .first('id')) as { id: string } | undefined;
    return row?.id;
  }

  /**
   * Moves a pending payment's settlement to `until` (its own statement, outside any settle
   * transaction), so a payment whose settlement keeps failing does not come first in every sweep.
   */
  async deferSettlement(paymentId: string, until: Date): Promise<void> {
    await this.db('payments').where({ id: paymentId, status: 'pending' }).update({ settle_after: until, updated_at: this.db.fn.now() });
  }

  async markSucceeded(paymentId: string, postingId: string): Promise<void> {
    await this.db('payments')
      .where({ id: paymentId, status: 'pending' })
      .update({ status: 'succeeded', posting_id: postingId, completed_at: this.db.fn.now(), updated_at: this.db.fn.now() });
  }

  async markFailed(paymentId: string, reason: string): Promise<void> {
    await this.db('payments')
      .where({ id: paymentId, status: 'pending' })
      .update({ status: 'failed', failure_reason: reason, completed_at: this.db.fn.now(), updated_at: this.db.fn.now() });
  }
}
