import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import { ValidationError } from '../../errors';
import { withTransaction } from '../../db/transaction';
import { EventRepository } from '../events';
import { currencies, formatMinor } from '../ledger';
import { presentDocument } from './invoice-presenter';
import { computeTotals, type LineItemInput } from './invoice-amounts';
import {
  ActionNotApplicableError,
  CreditNoteExceedsRemainingError,
  CustomerNotFoundError,
  DocumentNotFoundError,
  InvoiceNotCreditableError,
  NumberingExhaustedError,
  QuoteExpiredError,
} from './invoice-errors';
import { initialStatus, nextStatus, type DocumentAction } from './invoice-lifecycle';
import { InvoiceRepository, type DocumentChange, type RenderedRow } from './invoice-repository';
import {
  STATUSES_BY_KIND,
  formatDocumentNumber,
  type BillingDocument,
  type CreditNoteReason,
  type Customer,
  type DocumentKind,
  type DocumentStatus,
} from './invoice-types';
import { readConnection } from '../../db/read-routing';

/** The first instant a quote may not expire at: the year 10000. */
const LATEST_EXPIRY_MS = Date.UTC(10000, 0, 1);

/** A document with the minor-unit exponent of its currency, ready to be shown. */
export type DocumentView = BillingDocument & { exponent: number };


export interface ListDocumentsInput {
  kind?: DocumentKind;
  status?: DocumentStatus;
  customerId?: string;
  limit: number;
  startingAfter?: string;
}

export interface CreateCustomerInput {
  name: string;
  email?: string | null;
  phone?: string | null;
}

export interface CreateDocumentInput {
  kind: 'invoice' | 'quote';
  customerId: string;
  currency: string;
  lineItems: LineItemInput[];
  memo?: string | null;
  /** Invoices: YYYY-MM-DD; defaults to 30 days after finalisation. */
  dueDate?: string | null;
  /** Quotes: defaults to 30 days after finalisation. */
  expiresAt?: Date | null;
}

export interface CreateCreditNoteInput {
  reason: CreditNoteReason;
  lineItems: LineItemInput[];
  memo?: string | null;
}

export interface InvoiceServiceOptions {
  clock?: Clock;
  /** Days from finalisation to an invoice's default due date and a quote's default expiry. */
  defaultTermDays?: number;
}

const DAY_MS = 86_400_000;

/** The event each transition records (`invoice.paid`, `quote.canceled`, `credit_note.voided`...). */
const EVENT_OF_ACTION = { pay: 'paid', mark_uncollectible: 'marked_uncollectible', void: 'voided', cancel: 'canceled' } as const;
/** The number format's largest sequence: nine digits (INV-2026-999999999; CHECK documents_number_format). */
const MAX_SEQUENCE = 999_999_999;

/** YYYY-MM-DD of `date` in UTC. */
export function utcDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/**
 * Invoices, quotes and credit notes. Every method is scoped to one organisation (the access
 * policy has already checked the caller's membership and role) and runs as one transaction;
 * a document is locked (FOR UPDATE) before it changes, an invoice before its credit notes.
 */
export class InvoiceService {
  private readonly now: Clock;
  private readonly termDays: number;

  constructor(
    private readonly knex: Knex,
    options: InvoiceServiceOptions,
  ) {
    this.now = options.clock ?? systemClock;
    this.termDays = options.defaultTermDays ?? 30;
  }

  private async view(db: Knex | Knex.Transaction, doc: BillingDocument): Promise<DocumentView> {
    const currency = await currencies.require(db, doc.currency);
    return { ...doc, exponent: currency.exponent };
  }

  async createCustomer(db: Knex | Knex.Transaction, organizationId: string, input: CreateCustomerInput): Promise<Customer> {
    return new InvoiceRepository(db).insertCustomer({
      organizationId,
      name: input.name,
      email: input.email ? input.email.toLowerCase() : null,
      phone: input.phone ?? null,
    });
  }

  async getDocument(organizationId: string, id: string): Promise<DocumentView> {
    const doc = await new InvoiceRepository(this.knex).findDocument(organizationId, id, { asOf: this.now() });
    if (!doc) throw new DocumentNotFoundError();
    return this.view(this.knex, doc);
  }

  /**
   * Newest first, `limit + 1` documents as the contract's JSON (the extra one says more
   * follow: toRenderedListPage). A status that does not exist for the requested kind is a 400,
   * as is a cursor that is not a document of this organisation.
   */
  async listDocuments(organizationId: string, input: ListDocumentsInput): Promise<RenderedRow[]> {
    if (input.kind && input.status && !STATUSES_BY_KIND[input.kind].includes(input.status)) {
      throw ValidationError.field(
        'query.status',
        `A ${input.kind} is never ${input.status}: use one of ${STATUSES_BY_KIND[input.kind].join(', ')}.`,
      );
    }
    return new InvoiceRepository(readConnection(this.knex)).listRendered({ organizationId, ...input, asOf: this.now() });
  }

  /** Creates a draft in `db`'s transaction (the pipeline's, which an Idempotency-Key completes in). */
  async createDocument(db: Knex | Knex.Transaction, organizationId: string, actorUserId: string, input: CreateDocumentInput): Promise<DocumentView> {
    const now = this.now();
    if (input.kind === 'invoice' && input.expiresAt) throw ValidationError.field('body.expires_at', 'expires_at applies to quotes only.');
    if (input.kind === 'quote' && input.dueDate) throw ValidationError.field('body.due_date', 'due_date applies to invoices only.');
    if (input.dueDate && !isCalendarDate(input.dueDate)) throw ValidationError.field('body.due_date', 'due_date must be a real calendar date (YYYY-MM-DD).');
    if (input.dueDate && input.dueDate < utcDate(now)) throw ValidationError.field('body.due_date', 'due_date must not be in the past.');
    if (input.expiresAt && Number.isNaN(input.expiresAt.getTime())) throw ValidationError.field('body.expires_at', 'expires_at must be a valid date-time.');
    if (input.expiresAt && input.expiresAt.getTime() <= now.getTime()) throw ValidationError.field('body.expires_at', 'expires_at must be in the future.');
    // A later instant has no four-digit year (JSON dates of the year 10000 read +010000-...).
    if (input.expiresAt && input.expiresAt.getTime() >= LATEST_EXPIRY_MS) throw ValidationError.field('body.expires_at', 'expires_at must be before 10000-01-01T00:00:00Z.');
    return withTransaction(db, async (trx) => {
      const repo = new InvoiceRepository(trx);
      const currency = await currencies.require(trx, input.currency, 'body.currency');
      const totals = computeTotals(input.lineItems, currency.exponent);
      if (!(await repo.findCustomer(organizationId, input.customerId))) throw new CustomerNotFoundError();
      const doc = await repo.insertDocument({
        organizationId,
        kind: input.kind,
        status: initialStatus(input.kind),
        customerId: input.customerId,
        currency: currency.code,
        ...totals,
        memo: input.memo ?? null,
        dueDate: input.dueDate ?? null,
        expiresAt: input.expiresAt ?? null,
        createdBy: actorUserId,
        createdAt: now,
      });
      const view = { ...doc, exponent: currency.exponent };
      await recordDocumentEvent(trx, 'created', view, null, now, actorUserId);
      return view;
    });
  }

  /** Locks the document; 404 when it is not one of this organisation's. */
  private async lock(repo: InvoiceRepository, organizationId: string, id: string): Promise<BillingDocument> {
    const doc = await repo.findDocument(organizationId, id, { forUpdate: true });
    if (!doc) throw new DocumentNotFoundError();
    return doc;
  }

  private async assignNumber(repo: InvoiceRepository, organizationId: string, kind: DocumentKind, now: Date): Promise<string> {
    const year = now.getUTCFullYear();
    const sequence = await repo.nextNumber(organizationId, kind, year, MAX_SEQUENCE);
    if (sequence === null) throw new NumberingExhaustedError(kind, year);
    return formatDocumentNumber(kind, year, sequence);
  }

  /** Draft invoice or quote -> open, with its number, issue date and due date or expiry. */
  async finalize(db: Knex | Knex.Transaction, organizationId: string, id: string): Promise<DocumentView> {
    const now = this.now();
    return withTransaction(db, async (trx) => {
      const repo = new InvoiceRepository(trx);
      const doc = await this.lock(repo, organizationId, id);
      const status = nextStatus(doc.kind, doc.status, 'finalize');
      const change: DocumentChange = { status, issueDate: utcDate(now), finalizedAt: now };
      if (doc.kind === 'invoice') {
        change.dueDate = doc.dueDate ?? utcDate(new Date(now.getTime() + this.termDays * DAY_MS));
        if (change.dueDate < utcDate(now)) throw ValidationError.field('due_date', 'The due date is in the past: create a new draft with a later due_date.');
      } else {
        if (doc.expiresAt && doc.expiresAt.getTime() <= now.getTime()) throw new QuoteExpiredError(doc.expiresAt);
        change.expiresAt = doc.expiresAt ?? new Date(now.getTime() + this.termDays * DAY_MS);
      }
      change.number = await this.assignNumber(repo, organizationId, doc.kind, now);
      const view = await this.view(trx, await repo.updateDocument(organizationId, id, change));
      await recordDocumentEvent(trx, 'finalized', view, doc.status, now);
      return view;
    });
  }

  /** pay, mark_uncollectible, void (invoice or credit note), cancel (quote). */
  async transition(db: Knex | Knex.Transaction, organizationId: string, id: string, action: Exclude<DocumentAction, 'finalize' | 'accept'>): Promise<DocumentView> {
    const now = this.now();
    return withTransaction(db, async (trx) => {
      const repo = new InvoiceRepository(trx);
      const peek = await repo.findDocument(organizationId, id);
      if (!peek) throw new DocumentNotFoundError();
      // A credit note's invoice is locked first, in the same order as when a credit note is issued.
      const invoice = peek.kind === 'credit_note' && peek.invoiceId ? await this.lock(repo, organizationId, peek.invoiceId) : undefined;
      const doc = await this.lock(repo, organizationId, id);
      if (doc.kind === 'quote' && action === 'cancel' && doc.status === 'open' && doc.expiresAt && doc.expiresAt <= now) {
        const canceled = await this.view(trx, await repo.updateDocument(organizationId, id, { status: nextStatus(doc.kind, doc.status, 'cancel'), canceledAt: doc.expiresAt }));
        await recordDocumentEvent(trx, 'canceled', canceled, doc.status, now);
        return canceled;
      }
      const status = nextStatus(doc.kind, doc.status, action);
      const change: DocumentChange = { status };
      if (action === 'pay') change.paidAt = now;
      if (action === 'mark_uncollectible') change.markedUncollectibleAt = now;
      if (action === 'void') change.voidedAt = now;
      if (action === 'cancel') change.canceledAt = now;
      const updated = await repo.updateDocument(organizationId, id, change);
      if (invoice && action === 'void') {
        await repo.updateDocument(organizationId, invoice.id, { creditedMinor: invoice.creditedMinor - doc.totalMinor });
      }
      const view = await this.view(trx, updated);
      await recordDocumentEvent(trx, EVENT_OF_ACTION[action], view, doc.status, now);
      return view;
    });
  }

  /**
   * Open quote -> accepted, creating its draft invoice, in `db` (the caller's transaction when it
   * is one). An expired quote is canceled instead and answered as a refusal (409 QuoteExpired) to
   * throw once that cancellation is committed.
   */
  async tryAcceptQuote(db: Knex | Knex.Transaction, organizationId: string, id: string, actorUserId: string): Promise<{ document: DocumentView } | { refusal: QuoteExpiredError }> {
    const now = this.now();
    const outcome = await withTransaction(db, async (trx) => {
      const repo = new InvoiceRepository(trx);
      const quote = await this.lock(repo, organizationId, id);
      if (quote.kind !== 'quote') throw new ActionNotApplicableError(quote.kind, 'accept');
      if (quote.status === 'open' && quote.expiresAt && quote.expiresAt <= now) {
        // An expired quote is canceled as its own `cancel` would (open -> canceled).
        const canceled = await repo.updateDocument(organizationId, id, { status: nextStatus(quote.kind, quote.status, 'cancel'), canceledAt: quote.expiresAt });
        await recordDocumentEvent(trx, 'canceled', await this.view(trx, canceled), quote.status, now);
        return { document: undefined, expiredAt: quote.expiresAt };
      }
      const status = nextStatus(quote.kind, quote.status, 'accept');
      const invoice = await repo.insertDocument({
        organizationId,
        kind: 'invoice',
        status: initialStatus('invoice'),
        customerId: quote.customerId,
        currency: quote.currency,
        lineItems: quote.lineItems,
        subtotalMinor: quote.subtotalMinor,
        taxMinor: quote.taxMinor,
        totalMinor: quote.totalMinor,
        memo: quote.memo,
        createdBy: actorUserId,
        createdAt: now,
      });
      const accepted = await this.view(trx, await repo.updateDocument(organizationId, id, { status, acceptedAt: now, invoiceId: invoice.id }));
      await recordDocumentEvent(trx, 'accepted', accepted, quote.status, now, actorUserId);
      await recordDocumentEvent(trx, 'created', await this.view(trx, invoice), null, now, actorUserId);
      return { document: accepted, expiredAt: undefined };
    });
    if (!outcome.document) return { refusal: new QuoteExpiredError(outcome.expiredAt as Date) };
    return { document: outcome.document };
  }

  /**
   * Issues a credit note against a finalised invoice. The invoice row is locked, so concurrent
   * credit notes queue and their sum never exceeds the invoice's total.
   */
  async createCreditNote(db: Knex | Knex.Transaction, organizationId: string, invoiceId: string, actorUserId: string, input: CreateCreditNoteInput): Promise<DocumentView> {
    const now = this.now();
    return withTransaction(db, async (trx) => {
      const repo = new InvoiceRepository(trx);
      const invoice = await this.lock(repo, organizationId, invoiceId);
      if (invoice.kind !== 'invoice') throw new ActionNotApplicableError(invoice.kind, 'credit');
      if (!['open', 'paid', 'uncollectible'].includes(invoice.status)) throw new InvoiceNotCreditableError(invoice.status);
      const currency = await currencies.require(trx, invoice.currency);
      const totals = computeTotals(input.lineItems, currency.exponent);
      const remaining = invoice.totalMinor - invoice.creditedMinor;
      if (totals.totalMinor > remaining) {
        throw new CreditNoteExceedsRemainingError(
          formatMinor(remaining, currency.exponent),
          formatMinor(totals.totalMinor, currency.exponent),
          currency.code,
        );
      }
      if (totals.totalMinor === 0n) throw ValidationError.field('body.line_items', 'A credit note must credit a positive amount.');
      const number = await this.assignNumber(repo, organizationId, 'credit_note', now);
      const note = await repo.insertDocument({
        organizationId,
        kind: 'credit_note',
        status: initialStatus('credit_note'),
        number,
        customerId: invoice.customerId,
        currency: invoice.currency,
        ...totals,
        memo: input.memo ?? null,
        issueDate: utcDate(now),
        invoiceId: invoice.id,
        creditReason: input.reason,
        finalizedAt: now,
        createdBy: actorUserId,
        createdAt: now,
      });
      await repo.updateDocument(organizationId, invoice.id, { creditedMinor: invoice.creditedMinor + totals.totalMinor });
      const view = { ...note, exponent: currency.exponent };
      await recordDocumentEvent(trx, 'created', view, null, now, actorUserId);
      return view;
    });
  }
}

/** Records `<kind>.<what>` for a document in the transaction of its change, with the document as the API shows it. */
async function recordDocumentEvent(trx: Knex.Transaction, what: string, doc: DocumentView, previousStatus: DocumentStatus | null, at: Date, actorUserId: string | null = null): Promise<void> {
  await new EventRepository(trx).record({
    subjectType: doc.kind,
    subjectId: doc.id,
    type: `${doc.kind}.${what}`,
    actorUserId,
    occurredAt: at,
    organizationId: doc.organizationId,
    object: presentDocument(doc),
    previousStatus,
  });
}

/** True for an existing day written YYYY-MM-DD (2026-02-30 is not one). */
function isCalendarDate(value: string): boolean {
  const parsed = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === value;
}
