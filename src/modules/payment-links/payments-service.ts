import type { Knex } from 'knex';
import { DEFAULT_PAGE_LIMIT } from '../../contract';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../../clock';
import { withTransaction } from '../../db/transaction';
import { DomainError, NotFoundError, ValidationError } from '../../errors';
import type { AccountService, OrgAccount } from '../accounts';
import { EventRepository } from '../events';
import { externalClearingAccount, post } from '../ledger';
import { presentPayment } from './payment-links-presenter';
import { PaymentNotFound, PaymentRefused } from './payment-links-errors';
import { publicLinkView, type PublicPaymentLink } from './link-views';
import { PaymentLinksRepository, type LinkRecord } from './payment-links-repository';
import { checkAmountForLink } from './payment-links-service';
import type { Payment, PaymentLink, PaymentStatus } from './payment-links-types';
import { PaymentsRepository } from './payments-repository';
import type { SandboxPayer } from './sandbox';
import { readConnection } from '../../db/read-routing';

export interface StartPaymentInput {
  linkId: string;
  /** The form token's nonce: the payment's idempotency key. */
  nonce: string;
  amountMinor: bigint;
  /** The order reference the merchant fixed (the link's own or a signed URL's): reserves the order. */
  reference: string | null;
  /** A reference an unsigned URL carried: kept as a note, reserves nothing. */
  customerReference?: string | null;
  payer: SandboxPayer;
}

export interface PaymentsServiceOptions {
  /** How long the sandbox keeps a "delayed" payment pending. */
  sandboxDelayMs?: number;
  /** How far the sweep pushes back a payment whose settlement failed (default 60 s). */
  settleRetryMs?: number;
  clock?: Clock;
}

export const POSTING_KIND = 'payment_link.payment';

/**
 * Payments made on the public payment page, and their status for integrators.
 *
 * A payment is created `pending` (idempotently: one per form token), then settled by the
 * sandbox: `succeeded` with a ledger posting from the external clearing account to the
 * destination account's ledger account, or `failed` with a reason. Settling is one
 * transaction that locks the payment, so a payment settles once whoever triggers it (its
 * timer in the process that took it, or the sweep). Reads (the result page, the status API)
 * never settle: they show the payment as it stands.
 */
export class PaymentsService {
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Settlements under way (fired by a timer, the sweep or a payment): stop() waits for them. */
  private readonly settling = new Set<Promise<unknown>>();
  private stopped = false;
  private readonly sandboxDelayMs: number;
  private readonly settleRetryMs: number;
  private readonly clock: Clock;

  constructor(
    private readonly knex: Knex,
    private readonly accounts: AccountService,
    private readonly logger: Logger,
    options: PaymentsServiceOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.sandboxDelayMs = options.sandboxDelayMs ?? 8_000;
    this.settleRetryMs = options.settleRetryMs ?? 60_000;
  }

  /** The destination account when it can receive money now (active), else undefined. */
  private async activeDestination(db: Knex | Knex.Transaction, organizationId: string, accountId: string, forUpdate = false): Promise<OrgAccount | undefined> {
    try {
      const account = await this.accounts.getAccountForOrganization(organizationId, accountId, db, { forUpdate });
      return account.status === 'active' && account.ledgerStatus === 'active' ? account : undefined;
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /** The link behind a public code, refused (404, 410, 409) when it cannot take a payment. */
  async payableLink(code: string): Promise<PublicPaymentLink> {
    const link = await this.linkForCode(code);
    this.refuseUnusable(link);
    const account = await this.activeDestination(this.knex, link.organizationId, link.destinationAccountId);
    if (!account) {
      throw new PaymentRefused('account_unavailable', `${link.organizationName} cannot receive payments at the moment. Try again later.`);
    }
    return link;
  }

  /** The link behind a public code whatever its status (404 when unknown). */
  async linkForCode(code: string): Promise<PublicPaymentLink> {
    const link = await new PaymentLinksRepository(this.knex).findByCode(code);
    if (!link) throw new PaymentRefused('unknown_link', 'This payment link does not exist. Check the address you were given.');
    return publicLinkView(this.knex, link, this.clock());
  }

  /**
   * Refuses a link that cannot take a payment: deactivated, expired or paid, or whose
   * organisation may not collect payments now (not active, or its payment_links module locked
   * or not enabled).
   */
  private refuseUnusable(link: PublicPaymentLink): void {
    if (link.status === 'inactive') throw new PaymentRefused('link_inactive', 'This payment link has been deactivated by the merchant.');
    if (link.status === 'expired') throw new PaymentRefused('link_expired', 'This payment link has expired.');
    if (link.status === 'completed') throw new PaymentRefused('link_completed', 'This payment link has already been paid.');
    if (!link.organizationCanCollect) {
      throw new PaymentRefused('merchant_unavailable', `${link.organizationName} does not accept payments through this link at the moment. Contact the merchant.`);
    }
  }

  /**
   * Creates the pending payment of a form submission, or returns the one that submission
   * already created (a double submit never creates two payments). Then settles it at once
   * unless the sandbox asked for a delay.
   */
  async start(input: StartPaymentInput): Promise<Payment> {
    const payment = await withTransaction(this.knex, async (trx) => {
      const links = new PaymentLinksRepository(trx);
      const payments = new PaymentsRepository(trx);
      if (!(await links.lock(input.linkId))) throw new PaymentRefused('unknown_link', 'This payment link does not exist.');
      const existing = await payments.findByNonce(input.linkId, input.nonce);
      if (existing) return existing;
      const link = await publicLinkView(trx, (await links.findByIdForPayment(input.linkId)) as LinkRecord, this.clock());
      this.refuseUnusable(link);
      const account = await this.activeDestination(trx, link.organizationId, link.destinationAccountId);
      if (!account) {
        throw new PaymentRefused('account_unavailable', `${link.organizationName} cannot receive payments at the moment. Try again later.`);
      }
      checkAmountForLink(link, input.amountMinor);
      if (input.reference !== null && input.reference.length > 128) throw ValidationError.field('reference', 'The reference is too long.');
      const customerReference = input.reference === null ? (input.customerReference ?? null) : null;
      if (customerReference !== null && customerReference.length > 128) throw ValidationError.field('reference', 'The reference is too long.');
      const oneOff = link.kind === 'link';
      if (oneOff) {
        const open = await payments.findOpenForLink(link.id);
        if (open?.status === 'succeeded') throw new PaymentRefused('link_completed', 'This payment link has already been paid.');
        if (open) throw new PaymentRefused('link_busy', 'A payment on this link is already in progress. Wait for its result before trying again.');
      }
      if (input.reference !== null) await this.refusePaidReference(link, input.reference, payments);
      const id = await payments.insert({
        organizationId: link.organizationId,
        linkId: link.id,
        oneOff,
        destinationAccountId: account.id,
        currency: link.currency,
        amountMinor: input.amountMinor,
        reference: input.reference,
        customerReference,
        method: input.payer.method,
        payerLast4: input.payer.last4,
        sandboxOutcome: input.payer.decision.outcome,
        settleAfter: new Date(this.clock().getTime() + (input.payer.decision.delayed ? this.sandboxDelayMs : 0)),
        formNonce: input.nonce,
      });
      return (await payments.findById(id)) as Payment;
    });
    if (payment.status !== 'pending') return payment;
    if (payment.settleAfter.getTime() <= this.clock().getTime()) return this.settle(payment.id);
    this.scheduleSettlement(payment);
    return payment;
  }

  /**
   * Refuses a new payment for an order (reference) of the link that is paid or being paid.
   * Only inside start(): the payment page's GET never asks.
   */
  private async refusePaidReference(link: PaymentLink, reference: string, payments: PaymentsRepository): Promise<void> {
    const open = await payments.findOpenForReference(link.id, reference);
    if (open?.status === 'succeeded') {
      throw new PaymentRefused('reference_paid', `The order ${reference} has already been paid to ${link.organizationName}. Nothing more to pay.`);
    }
    if (open) throw new PaymentRefused('link_busy', `A payment for the order ${reference} is already in progress. Wait for its result before trying again.`);
  }

  private scheduleSettlement(payment: Payment): void {
    if (this.stopped) return; // the next start's sweep settles it
    const delay = Math.max(0, payment.settleAfter.getTime() - this.clock().getTime()) + 50;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.settle(payment.id).catch((error: unknown) => this.logger.error({ err: error, paymentId: payment.id }, 'sandbox settlement failed'));
    }, delay);
    timer.unref();
    this.timers.add(timer);
  }

  /**
   * Applies the sandbox decision of a pending payment once it is due: on success, the ledger
   * posting (external clearing -> destination account) and the payment's status commit
   * together; a one-off link becomes `completed`. Returns the payment as it now stands.
   */
  settle(paymentId: string, now = this.clock()): Promise<Payment> {
    return this.track(this.settleNow(paymentId, now));
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.settling.add(promise);
    const forget = () => this.settling.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  /**
   * One settlement in a transaction of its own. Settlements are driven by the sandbox's timers
   * and the sweep, a few at a time: the payment's row lock makes each settle once, and the
   * posting locks its accounts in id order (ledger_post), as every other posting does. A lost
   * connection runs it again on a new one: a run whose commit went through unanswered finds the
   * payment settled, and settles nothing twice.
   */
  private async settleNow(paymentId: string, now: Date): Promise<Payment> {
    return (await withTransaction(this.knex, (trx) => this.settleIn(trx, paymentId, now), { retryOnConnectionLoss: true })).payment;
  }

  /** Settles the payment in `trx` when it is pending and due; `changed` says whether it did. */
  private async settleIn(trx: Knex.Transaction, paymentId: string, now: Date): Promise<{ payment: Payment; changed: boolean }> {
    const payments = new PaymentsRepository(trx);
    const payment = await payments.findById(paymentId, { forUpdate: true });
    if (!payment) throw new PaymentNotFound();
    if (payment.status !== 'pending' || payment.settleAfter.getTime() > now.getTime()) return { payment, changed: false };
    if (payment.sandboxOutcome.startsWith('failed:')) {
      await payments.markFailed(payment.id, payment.sandboxOutcome.slice('failed:'.length));
    } else {
      const account = await this.activeDestination(trx, payment.organizationId, payment.destinationAccountId, true);
      if (!account) {
        await payments.markFailed(payment.id, 'destination_unavailable');
      } else {
        const clearing = await externalClearingAccount(trx, payment.currency);
        let postingId: string | null = null;
        try {
          const posting = await post(trx, {
            kind: POSTING_KIND,
            reference: payment.id,
            // The destination account's statement line reads "Payment received - <reference>"
            // (describePosting): the integrator's order reference, for reconciliation.
            metadata: {
              organization_id: payment.organizationId,
              link_id: payment.linkId,
              payment_id: payment.id,
              method: payment.method,
              ...(payment.reference !== null ? { reference: payment.reference } : {}),
            },
            entries: [
              { accountId: clearing.id, amountMinor: -payment.amountMinor },
              { accountId: account.ledgerAccountId, amountMinor: payment.amountMinor },
            ],
          });
          postingId = posting.id;
        } catch (error) {
          // A frozen destination ledger account, or one its tier limits keep from receiving this
          // amount, is refused before anything is written: the payment fails, nothing is taken.
          if (!(error instanceof DomainError && (error.code === 'AccountFrozen' || error.code === 'RecipientCannotReceive'))) throw error;
        }
        if (postingId) {
          await payments.markSucceeded(payment.id, postingId);
          if (payment.oneOff) await new PaymentLinksRepository(trx).setStatus(payment.linkId, 'completed');
        } else {
          await payments.markFailed(payment.id, 'destination_unavailable');
        }
      }
    }
    const settled = (await payments.findById(payment.id)) as Payment;
    await new EventRepository(trx).record({
      subjectType: 'payment',
      subjectId: settled.id,
      type: settled.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed',
      actorUserId: null,
      occurredAt: now,
      organizationId: settled.organizationId,
      object: presentPayment(settled),
      previousStatus: payment.status,
    });
    return { payment: settled, changed: true };
  }

  /**
   * The sweep: settles one bounded batch of pending payments whose sandbox decision is due,
   * oldest due first. Run at service start (a restart lost the timers) and then on an
   * interval (src/main.ts); reads never settle anything. A payment that fails to settle is
   * logged and its settlement pushed back (settleRetryMs), so the next sweeps move on to the
   * others instead of retrying the same failing batch forever. Each payment is claimed and
   * settled in one transaction (FOR UPDATE SKIP LOCKED): instances sweeping at once each
   * settle different payments. Returns how many this call settled (a payment another instance
   * or its own timer settled first is not counted).
   */
  async sweepDue(options: { now?: Date; batchSize?: number } = {}): Promise<number> {
    const now = options.now ?? this.clock();
    const batchSize = options.batchSize ?? 100;
    let settled = 0;
    for (let taken = 0; taken < batchSize && !this.stopped; taken += 1) {
      let claimed: string | undefined;
      try {
        const outcome = await this.track(
          withTransaction(this.knex, async (trx) => {
            claimed = await new PaymentsRepository(trx).lockNextDue(now);
            if (claimed === undefined) return 'none' as const;
            return (await this.settleIn(trx, claimed, now)).changed ? ('settled' as const) : ('unchanged' as const);
          }),
        );
        if (outcome === 'none') break;
        if (outcome === 'settled') settled += 1;
      } catch (error) {
        if (claimed === undefined) throw error;
        const id = claimed;
        const retryAt = new Date(now.getTime() + this.settleRetryMs);
        this.logger.error({ err: error, paymentId: id, retryAt }, 'sandbox settlement failed; retried later');
        await new PaymentsRepository(this.knex)
          .deferSettlement(id, retryAt)
          .catch((deferError: unknown) => this.logger.error({ err: deferError, paymentId: id }, 'could not defer a failed sandbox settlement'));
      }
    }
    return settled;
  }


  /** A payment of a link, for its result page (as it stands: the page never settles it). */
  forPage(linkId: string, paymentId: string): Promise<Payment | undefined> {
    return new PaymentsRepository(this.knex).findById(paymentId, { linkId });
  }

  async get(organizationId: string, paymentId: string): Promise<Payment> {
    const payment = await new PaymentsRepository(this.knex).findById(paymentId, { organizationId });
    if (!payment) throw new PaymentNotFound();
    return payment;
  }

  async list(
    organizationId: string,
    filter: { linkId?: string; reference?: string; status?: PaymentStatus; limit?: number; startingAfter?: string },
  ): Promise<Payment[]> {
    return new PaymentsRepository(readConnection(this.knex)).list(organizationId, { ...filter, limit: filter.limit ?? DEFAULT_PAGE_LIMIT });
  }

  /**
   * Shutdown: clears the sandbox timers, stops the sweep before its next payment, and resolves
   * once every settlement already under way has finished (committed or rolled back), so the
   * pool can be closed after it. Payments left pending are settled by the next start's sweep.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    while (this.settling.size > 0) await Promise.allSettled([...this.settling]);
  }
}

/** A payment of an organisation as the API returns it, read in `db` (a caller's transaction); undefined when it has none with this id. */
export async function findPaymentView(db: Knex | Knex.Transaction, organizationId: string, paymentId: string): Promise<ReturnType<typeof presentPayment> | undefined> {
  const payment = await new PaymentsRepository(db).findById(paymentId, { organizationId });
  return payment ? presentPayment(payment) : undefined;
}
