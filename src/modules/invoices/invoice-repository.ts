import type { Knex } from 'knex';
import { Keyset, type PageProjection, type PageRequest } from '../../db/keyset';
import { toBigInt } from '../ledger';
import type { BillingDocument, CreditNoteReason, Customer, DocumentKind, DocumentStatus, LineItem } from './invoice-types';

type Db = Knex | Knex.Transaction;

interface LineItemRow {
  description: string;
  quantity: number;
  unit_amount_minor: string;
  tax_rate_bps: number;
  amount_minor: string;
  tax_minor: string;
}

interface DocumentRow {
  id: string;
  organization_id: string;
  kind: DocumentKind;
  status: DocumentStatus;
  number: string | null;
  customer_id: string | null;
  currency: string;
  line_items: LineItemRow[];
  subtotal_minor: string;
  tax_minor: string;
  total_minor: string;
  credited_minor: string;
  memo: string | null;
  issue_date: string | null;
  due_date: string | null;
  expires_at: Date | null;
  invoice_id: string | null;
  credit_reason: CreditNoteReason | null;
  finalized_at: Date | null;
  paid_at: Date | null;
  voided_at: Date | null;
  marked_uncollectible_at: Date | null;
  accepted_at: Date | null;
  canceled_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A listed document: its id (the page's cursor) and its contract JSON. */
export interface RenderedRow {
  id: string;
  json: string;
}

interface CustomerRow {
  id: string;
  organization_id: string;
  name: string;
  email: string | null;
  phone: string | null;
  created_at: Date;
}

const DOCUMENT_COLUMNS = [
  'id', 'organization_id', 'kind', 'number', 'customer_id', 'currency', 'line_items',
  'subtotal_minor', 'tax_minor', 'total_minor', 'credited_minor', 'memo',
  'expires_at', 'invoice_id', 'credit_reason', 'finalized_at', 'paid_at', 'voided_at',
  'marked_uncollectible_at', 'accepted_at', 'created_at', 'updated_at',
] as const;

/**
 * The columns of a document. Dates come back as text so no time zone ever shifts them.
 * Reads (`asOf` given) show an open quote past its expiry as canceled at its expiry, so
 * expiry needs no background job and no write on the read path; writes read the stored
 * status (`asOf` absent) and persist the expiry themselves.
 */
function documentColumns(knex: Db, alias: string, asOf?: Date | Knex.Raw): Array<string | Knex.Raw> {
  const a = (column: string) => `${alias}.${column}`;
  const stored = [a('status'), a('canceled_at')];
  const effective = asOf
    ? [
        knex.raw(`CASE WHEN ?? = 'quote' AND ?? = 'open' AND ?? <= ? THEN 'canceled' ELSE ?? END AS status`, [a('kind'), a('status'), a('expires_at'), asOf, a('status')]),
        knex.raw(`CASE WHEN ?? = 'quote' AND ?? = 'open' AND ?? <= ? THEN ?? ELSE ?? END AS canceled_at`, [
          a('kind'), a('status'), a('expires_at'), asOf, a('expires_at'), a('canceled_at'),
        ]),
      ]
    : stored;
  return [
    ...DOCUMENT_COLUMNS.map(a),
    ...effective,
    knex.raw(`to_char(??, 'YYYY-MM-DD') AS issue_date`, [a('issue_date')]),
    knex.raw(`to_char(??, 'YYYY-MM-DD') AS due_date`, [a('due_date')]),
  ];
}

const toLineItem = (row: LineItemRow): LineItem => ({
  description: row.description,
  quantity: Number(row.quantity),
  unitAmountMinor: toBigInt(row.unit_amount_minor),
  taxRateBps: Number(row.tax_rate_bps),
  amountMinor: toBigInt(row.amount_minor),
  taxMinor: toBigInt(row.tax_minor),
});

const fromLineItem = (line: LineItem): LineItemRow => ({
  description: line.description,
  quantity: line.quantity,
  unit_amount_minor: line.unitAmountMinor.toString(),
  tax_rate_bps: line.taxRateBps,
  amount_minor: line.amountMinor.toString(),
  tax_minor: line.taxMinor.toString(),
});

function toDocument(row: DocumentRow): BillingDocument {
  return {
    id: row.id,
    organizationId: row.organization_id,
    kind: row.kind,
    status: row.status,
    number: row.number,
    customerId: row.customer_id,
    currency: row.currency,
    lineItems: row.line_items.map(toLineItem),
    subtotalMinor: toBigInt(row.subtotal_minor),
    taxMinor: toBigInt(row.tax_minor),
    totalMinor: toBigInt(row.total_minor),
    creditedMinor: toBigInt(row.credited_minor),
    memo: row.memo,
    issueDate: row.issue_date,
    dueDate: row.due_date,
    expiresAt: row.expires_at,
    invoiceId: row.invoice_id,
    creditReason: row.credit_reason,
    transitions: {
      finalizedAt: row.finalized_at,
      paidAt: row.paid_at,
      voidedAt: row.voided_at,
      markedUncollectibleAt: row.marked_uncollectible_at,
      acceptedAt: row.accepted_at,
      canceledAt: row.canceled_at,
    },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const toCustomer = (row: CustomerRow): Customer => ({
  id: row.id,
  organizationId: row.organization_id,
  name: row.name,
  email: row.email,
  phone: row.phone,
  createdAt: row.created_at,
});

export type NewDocument = Pick<BillingDocument, 'organizationId' | 'kind' | 'status' | 'customerId' | 'currency' | 'lineItems' | 'subtotalMinor' | 'taxMinor' | 'totalMinor'> &
  Partial<Pick<BillingDocument, 'number' | 'memo' | 'issueDate' | 'dueDate' | 'expiresAt' | 'invoiceId' | 'creditReason'>> & {
    finalizedAt?: Date | null;
    createdBy?: string | null;
    /** The service's clock (the database's when absent). */
    createdAt?: Date;
  };

/** Columns a lifecycle step may change. */
export interface DocumentChange {
  status?: DocumentStatus;
  number?: string;
  issueDate?: string;
  dueDate?: string | null;
  expiresAt?: Date | null;
  invoiceId?: string;
  creditedMinor?: bigint;
  finalizedAt?: Date;
  paidAt?: Date;
  voidedAt?: Date;
  markedUncollectibleAt?: Date;
  acceptedAt?: Date;
  canceledAt?: Date;
}

export interface DocumentListQuery extends PageRequest {
  organizationId: string;
  kind?: DocumentKind;
  status?: DocumentStatus;
  customerId?: string;
  /** Quotes expired at this time are shown (and filtered) as canceled. */
  asOf: Date;
}

const DOCUMENTS = new Keyset({ table: 'documents', alias: 'd', noun: 'a document of this organization' });

function changeToRow(change: DocumentChange): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  if (change.status !== undefined) row.status = change.status;
  if (change.number !== undefined) row.number = change.number;
  if (change.issueDate !== undefined) row.issue_date = change.issueDate;
  if (change.dueDate !== undefined) row.due_date = change.dueDate;
  if (change.expiresAt !== undefined) row.expires_at = change.expiresAt;
  if (change.invoiceId !== undefined) row.invoice_id = change.invoiceId;
  if (change.creditedMinor !== undefined) row.credited_minor = change.creditedMinor.toString();
  if (change.finalizedAt !== undefined) row.finalized_at = change.finalizedAt;
  if (change.paidAt !== undefined) row.paid_at = change.paidAt;
  if (change.voidedAt !== undefined) row.voided_at = change.voidedAt;
  if (change.markedUncollectibleAt !== undefined) row.marked_uncollectible_at = change.markedUncollectibleAt;
  if (change.acceptedAt !== undefined) row.accepted_at = change.acceptedAt;
  if (change.canceledAt !== undefined) row.canceled_at = change.canceledAt;
  return row;
}

/** Knex queries of the billing documents; every query is scoped by organisation. */
export class InvoiceRepository {
  constructor(private readonly db: Db) {}

  async insertCustomer(input: { organizationId: string; name: string; email: string | null; phone: string | null }): Promise<Customer> {
    const [row] = await this.db('customers')
      .insert({ organization_id: input.organizationId, name: input.name, email: input.email, phone: input.phone })
      .returning(['id', 'organization_id', 'name', 'email', 'phone', 'created_at']);
    return toCustomer(row as CustomerRow);
  }

  async findCustomer(organizationId: string, id: string): Promise<Customer | undefined> {
    const row = (await this.db('customers')
      .where({ organization_id: organizationId, id })
      .first('id', 'organization_id', 'name', 'email', 'phone', 'created_at')) as CustomerRow | undefined;
    return row ? toCustomer(row) : undefined;
  }

  async insertDocument(doc: NewDocument): Promise<BillingDocument> {
    const [inserted] = await this.db('documents')
      .insert({
        organization_id: doc.organizationId,
        kind: doc.kind,
        status: doc.status,
        number: doc.number ?? null,
        customer_id: doc.customerId,
        currency: doc.currency,
        line_items: JSON.stringify(doc.lineItems.map(fromLineItem)),
        subtotal_minor: doc.subtotalMinor.toString(),
        tax_minor: doc.taxMinor.toString(),
        total_minor: doc.totalMinor.toString(),
        memo: doc.memo ?? null,
        issue_date: doc.issueDate ?? null,
        due_date: doc.dueDate ?? null,
        expires_at: doc.expiresAt ?? null,
        invoice_id: doc.invoiceId ?? null,
        credit_reason: doc.creditReason ?? null,
        finalized_at: doc.finalizedAt ?? null,
        created_by: doc.createdBy ?? null,
        ...(doc.createdAt ? { created_at: doc.createdAt, updated_at: doc.createdAt } : {}),
      })
      .returning('id');
    const id = (inserted as { id: string }).id;
    return (await this.findDocument(doc.organizationId, id)) as BillingDocument;
  }

  /**
   * The document of this organisation as of `asOf` (the database's now() when absent): an
   * expired open quote reads as canceled. `forUpdate` locks its row until the transaction ends
   * and returns the stored status.
   */
  async findDocument(organizationId: string, id: string, options: { forUpdate?: boolean; asOf?: Date } = {}): Promise<BillingDocument | undefined> {
    const query = this.db('documents')
      .where({ organization_id: organizationId, id })
      .first(documentColumns(this.db, 'documents', options.forUpdate ? undefined : (options.asOf ?? this.db.fn.now())));
    if (options.forUpdate) query.forUpdate();
    const row = (await query) as DocumentRow | undefined;
    return row ? toDocument(row) : undefined;
  }

  async updateDocument(organizationId: string, id: string, change: DocumentChange): Promise<BillingDocument> {
    const updated = await this.db('documents')
      .where({ organization_id: organizationId, id })
      .update({ ...changeToRow(change), updated_at: this.db.fn.now() });
    if (updated !== 1) throw new Error(`document ${id} was not updated`);
    return (await this.findDocument(organizationId, id)) as BillingDocument;
  }

  /**
   * The next number of (organisation, kind, year), or null when the sequence already reached
   * `max` (the number format's largest). The upsert locks the counter row until the
   * transaction ends (even when its WHERE refuses the update), so concurrent finalisations
   * queue, and a rollback gives the number back: numbers have neither gaps nor duplicates.
   * The counter never goes past `max`, so its CHECK constraint is never what refuses it.
   */
  async nextNumber(organizationId: string, kind: DocumentKind, year: number, max: number): Promise<number | null> {
    const result = await this.db.raw<{ rows: Array<{ last_number: number }> }>(
      `INSERT INTO document_number_counters (organization_id, kind, year, last_number) VALUES (?, ?, ?, 1)
       ON CONFLICT (organization_id, kind, year) DO UPDATE SET last_number = document_number_counters.last_number + 1
       WHERE document_number_counters.last_number < ?
       RETURNING last_number`,
      [organizationId, kind, year, max],
    );
    const row = result.rows[0];
    return row ? Number(row.last_number) : null;
  }

  /**
   * Newest first, `limit + 1` rows (the extra one tells whether there is more), each document
   * as the contract's Invoice already rendered as JSON by the database (DOCUMENT_JSON);
   * 400 when the cursor is not one of the organisation's documents. Written as SQL and
   * prepared, one statement per combination of filters (building it with knex would cost a
   * tenth of the list's CPU, parsing and presenting the rows most of the rest): the same
   * filters as the other reads.
   */
  async listRendered(query: DocumentListQuery): Promise<RenderedRow[]> {
    const { name, select, values } = documentListQuery(query);
    return DOCUMENTS.preparedRows<RenderedRow>(this.db, name, select, values, { organization_id: query.organizationId }, query, DOCUMENT_JSON);
  }
}

/** The statement `listRendered` runs for `query` (the cursor not checked): for EXPLAIN in the benchmark. */
export function documentListStatement(query: DocumentListQuery): { name: string; text: string; values: unknown[] } {
  const { name, select, values } = documentListQuery(query);
  return DOCUMENTS.preparedStatement(name, select, values, { organization_id: query.organizationId }, query, DOCUMENT_JSON);
}

/** The list's SELECT for the filters of `query`, named after which filters it has (one text per name). */
function documentListQuery(query: DocumentListQuery): { name: string; select: string; values: unknown[] } {
  const values: unknown[] = [query.organizationId, query.asOf];
  const param = (value: unknown) => `$${values.push(value)}`;
  let shape = '';
  let where = '';
  if (query.kind) {
    where += ` AND d.kind = ${param(query.kind)}`;
    shape += 'k';
  }
  if (query.status === 'canceled') {
    where += " AND (d.status = 'canceled' OR (d.kind = 'quote' AND d.status = 'open' AND d.expires_at <= $2))";
    shape += 'c';
  } else if (query.status === 'open') {
    where += " AND d.status = 'open' AND (d.kind <> 'quote' OR d.expires_at IS NULL OR d.expires_at > $2)";
    shape += 'o';
  } else if (query.status) {
    where += ` AND d.status = ${param(query.status)}`;
    shape += 's';
  }
  if (query.customerId) {
    where += ` AND d.customer_id = ${param(query.customerId)}`;
    shape += 'u';
  }
  return { name: `documents_json_${shape}`, select: `SELECT d.* FROM documents d WHERE d.organization_id = $1${where}`, values };
}

/** A timestamptz as Date.toISOString writes it (milliseconds, truncated as a JS Date truncates microseconds). */
const isoTimestamp = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** The effective status and cancellation of a document read at `$2` (as `documentColumns` with `asOf`). */
const EXPIRED_QUOTE = `d.kind = 'quote' AND d.status = 'open' AND d.expires_at <= $2`;
const money = (minor: string) => `format_minor(${minor}, c.exponent)`;

/**
 * What the list answers of each of its documents (`d`, read at `$2`: asOf): its `id`, and
 * `json`, the document as presentDocument presents it and JSON.stringify writes it,
 * byte for byte (test/integration/invoice-list-json.test.ts holds the two together). The row
 * types (migration 20261126000100) give row_to_json the contract's field names and order;
 * amounts go through format_minor (inlined: one numeric product each), timestamps through
 * to_char. The amount due follows amountDue: an invoice neither paid nor void owes its total
 * less its credit notes.
 */
const DOCUMENT_JSON: PageProjection = {
  columns: `d.id, row_to_json(ROW(
    d.id, d.kind, d.number,
    CASE WHEN ${EXPIRED_QUOTE} THEN 'canceled' ELSE d.status END,
    d.customer_id, d.currency,
    (SELECT ('[' || coalesce(string_agg(row_to_json(ROW(
               item.line->'description', (item.line->'quantity')::integer, ${money("(item.line->>'unit_amount_minor')::bigint")},
               (item.line->'tax_rate_bps')::integer, ${money("(item.line->>'amount_minor')::bigint")}, ${money("(item.line->>'tax_minor')::bigint")}
             )::invoice_json_line_item)::text, ',' ORDER BY item.position), '') || ']')::json
       FROM jsonb_array_elements(d.line_items) WITH ORDINALITY AS item(line, position)),
    ${money('d.subtotal_minor')}, ${money('d.tax_minor')}, ${money('d.total_minor')},
    ${money("CASE WHEN d.kind = 'invoice' AND d.status NOT IN ('paid', 'void') THEN d.total_minor - d.credited_minor ELSE 0 END")},
    ${money('d.credited_minor')},
    d.memo, to_char(d.issue_date, 'YYYY-MM-DD'), to_char(d.due_date, 'YYYY-MM-DD'), ${isoTimestamp('d.expires_at')},
    d.invoice_id, d.credit_reason,
    ROW(${isoTimestamp('d.finalized_at')}, ${isoTimestamp('d.paid_at')}, ${isoTimestamp('d.voided_at')},
        ${isoTimestamp('d.marked_uncollectible_at')}, ${isoTimestamp('d.accepted_at')},
        ${isoTimestamp(`CASE WHEN ${EXPIRED_QUOTE} THEN d.expires_at ELSE d.canceled_at END`)})::invoice_json_status_transitions,
    ${isoTimestamp('d.created_at')}, ${isoTimestamp('d.updated_at')}
  )::invoice_json)::text AS json`,
  join: 'JOIN currencies c ON c.code = d.currency',
};
