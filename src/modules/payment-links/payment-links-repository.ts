import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import { currencies, toBigInt } from '../ledger';
import type { PaymentLink, PaymentLinkKind, PaymentLinkStatus } from './payment-links-types';

type Db = Knex | Knex.Transaction;

interface LinkRow {
  id: string;
  organization_id: string;
  kind: PaymentLinkKind;
  code: string;
  destination_account_id: string;
  currency: string;
  amount_minor: string | null;
  minimum_amount_minor: string | null;
  maximum_amount_minor: string | null;
  description: string | null;
  reference: string | null;
  require_signed_amount: boolean;
  status: StoredLinkStatus;
  expires_at: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The statuses a link row holds; `expired` is derived from expires_at when the link is read (see link-views.ts). */
export type StoredLinkStatus = Exclude<PaymentLinkStatus, 'expired'>;

/** A link as stored: without its organisation's name and with its stored status. */
export type LinkRecord = Omit<PaymentLink, 'organizationName' | 'status'> & { status: StoredLinkStatus };

const optionalBigInt = (value: string | null): bigint | null => (value === null ? null : toBigInt(value));

function toRecord(row: LinkRow & { exponent: number }): LinkRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    kind: row.kind,
    code: row.code,
    destinationAccountId: row.destination_account_id,
    currency: row.currency.trim(),
    exponent: row.exponent,
    amountMinor: optionalBigInt(row.amount_minor),
    minimumAmountMinor: optionalBigInt(row.minimum_amount_minor),
    maximumAmountMinor: optionalBigInt(row.maximum_amount_minor),
    description: row.description,
    reference: row.reference,
    requireSignedAmount: row.require_signed_amount,
    status: row.status,
    expiresAt: row.expires_at,
    createdBy: row.created_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Links as stored, each with its currency's exponent (the ledger's reference data). */
async function toRecords(db: Db, rows: readonly LinkRow[]): Promise<LinkRecord[]> {
  return (await currencies.withExponents(db, rows)).map(toRecord);
}

const LINKS = new Keyset({ table: 'payment_links', alias: 'l', noun: 'a payment link of this organisation' });

export interface NewLink {
  organizationId: string;
  kind: PaymentLinkKind;
  code: string;
  destinationAccountId: string;
  currency: string;
  amountMinor?: bigint | null;
  minimumAmountMinor?: bigint | null;
  maximumAmountMinor?: bigint | null;
  description?: string | null;
  reference?: string | null;
  requireSignedAmount?: boolean;
  expiresAt?: Date | null;
  createdBy: string | null;
}

function linkColumns(link: NewLink): Record<string, unknown> {
  const minor = (value: bigint | null | undefined) => (value === null || value === undefined ? null : value.toString());
  return {
    organization_id: link.organizationId,
    kind: link.kind,
    code: link.code,
    destination_account_id: link.destinationAccountId,
    currency: link.currency,
    amount_minor: minor(link.amountMinor),
    minimum_amount_minor: minor(link.minimumAmountMinor),
    maximum_amount_minor: minor(link.maximumAmountMinor),
    description: link.description ?? null,
    reference: link.reference ?? null,
    require_signed_amount: link.requireSignedAmount ?? false,
    expires_at: link.expiresAt ?? null,
    created_by: link.createdBy,
  };
}

export interface ListLinksFilter extends PageRequest {
  kind?: PaymentLinkKind;
}

/** Knex queries of payment links and Checkouts. */
export class PaymentLinksRepository {
  constructor(private readonly db: Db) {}

  /** Creates the account's Checkout unless one exists; returns the new id, or null when one existed. */
  async insertCheckoutIfAbsent(link: NewLink): Promise<string | null> {
    const rows = (await this.db('payment_links')
      .insert(linkColumns({ ...link, kind: 'checkout' }))
      .onConflict(this.db.raw(`(destination_account_id) WHERE kind = 'checkout'`))
      .ignore()
      .returning('id')) as Array<{ id: string }>;
    return rows[0]?.id ?? null;
  }

  async insertLink(link: NewLink): Promise<string> {
    const [row] = (await this.db('payment_links').insert(linkColumns(link)).returning('id')) as Array<{ id: string }>;
    return (row as { id: string }).id;
  }

  async findCheckoutForAccount(destinationAccountId: string): Promise<LinkRecord | undefined> {
    return this.findOne({ 'l.destination_account_id': destinationAccountId, 'l.kind': 'checkout' });
  }

  async findById(organizationId: string, linkId: string): Promise<LinkRecord | undefined> {
    return this.findOne({ 'l.id': linkId, 'l.organization_id': organizationId });
  }

  /** For the public page only: the link a signed form token names (no organisation in scope). */
  async findByIdForPayment(linkId: string): Promise<LinkRecord | undefined> {
    return this.findOne({ 'l.id': linkId });
  }

  /** For the public page only: the link behind a public code. */
  async findByCode(code: string): Promise<LinkRecord | undefined> {
    return this.findOne({ 'l.code': code });
  }

  private async findOne(where: Record<string, string>): Promise<LinkRecord | undefined> {
    const row = (await this.db('payment_links as l').where(where).first('l.*')) as LinkRow | undefined;
    return row ? (await toRecords(this.db, [row]))[0] : undefined;
  }

  /** Locks a link row (payments on one link are serialised by it). */
  async lock(linkId: string): Promise<boolean> {
    const row = await this.db('payment_links').where({ id: linkId }).forUpdate().first('id');
    return row !== undefined;
  }

  /** Newest first, `limit + 1` rows; 400 when the cursor is not one of the organisation's links. */
  async list(organizationId: string, filter: ListLinksFilter): Promise<LinkRecord[]> {
    const query = this.db('payment_links as l').where('l.organization_id', organizationId).select('l.*');
    if (filter.kind) query.andWhere('l.kind', filter.kind);
    return toRecords(this.db, await LINKS.rows<LinkRow>(this.db, query, { organization_id: organizationId }, filter));
  }

  async exists(organizationId: string, linkId: string): Promise<boolean> {
    return LINKS.cursorInScope(this.db, { organization_id: organizationId }, linkId);
  }

  async setStatus(linkId: string, status: StoredLinkStatus): Promise<void> {
    const changes: Record<string, unknown> = { status, updated_at: this.db.fn.now() };
    if (status === 'inactive') changes.deactivated_at = this.db.fn.now();
    if (status === 'completed') changes.completed_at = this.db.fn.now();
    if (status === 'active') changes.deactivated_at = null;
    await this.db('payment_links').where({ id: linkId }).update(changes);
  }

  async setRequireSignedAmount(linkId: string, value: boolean): Promise<void> {
    await this.db('payment_links').where({ id: linkId }).update({ require_signed_amount: value, updated_at: this.db.fn.now() });
  }
}
