import type { Knex } from 'knex';
import { toBigInt } from '../ledger';
import type { PaymentLink, PaymentLinkKind, PaymentLinkStatus } from './payment-links-types';

type Db = Knex | Knex.Transaction;

interface LinkRow {
  id: string;
  organization_id: string;
  organization_name: string;
  kind: PaymentLinkKind;
  code: string;
  destination_account_id: string;
  currency: string;
  exponent: number;
  amount_minor: string | null;
  minimum_amount_minor: string | null;
  maximum_amount_minor: string | null;
  description: string | null;
  reference: string | null;
  require_signed_amount: boolean;
  status: PaymentLinkStatus;
  expires_at: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

const optionalBigInt = (value: string | null): bigint | null => (value === null ? null : toBigInt(value));

function toLink(row: LinkRow, now = Date.now()): PaymentLink {
  const expired = row.status === 'active' && row.expires_at !== null && row.expires_at.getTime() <= now;
  return {
    id: row.id,
    organizationId: row.organization_id,
    organizationName: row.organization_name,
    kind: row.kind,
    code: row.code,
    destinationAccountId: row.destination_account_id,
    currency: row.currency.trim(),
    exponent: Number(row.exponent),
    amountMinor: optionalBigInt(row.amount_minor),
    minimumAmountMinor: optionalBigInt(row.minimum_amount_minor),
    maximumAmountMinor: optionalBigInt(row.maximum_amount_minor),
    description: row.description,
    reference: row.reference,
    requireSignedAmount: row.require_signed_amount,
    status: expired ? 'expired' : row.status,
    expiresAt: row.expires_at,
    createdBy: row.created_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * A link as the public payment page sees it: with whether its organisation may collect
 * payments now (active, its payment_links module enabled and not locked).
 */
export interface PublicPaymentLink extends PaymentLink {
  organizationCanCollect: boolean;
}

interface PublicLinkRow extends LinkRow {
  organization_status: string;
  payment_links_access: string | null;
}

function toPublicLink(row: PublicLinkRow): PublicPaymentLink {
  const canCollect = row.organization_status === 'active' && row.payment_links_access !== null && row.payment_links_access !== 'locked';
  return { ...toLink(row), organizationCanCollect: canCollect };
}

/** selectLinks plus the organisation's status and its payment_links module access (null when not enabled). */
function selectPublicLinks(db: Db): Knex.QueryBuilder {
  return selectLinks(db).select(
    'o.status as organization_status',
    db.raw(`(SELECT om.access FROM organization_modules om WHERE om.organization_id = l.organization_id AND om.module = 'payment_links') AS payment_links_access`),
  );
}

function selectLinks(db: Db): Knex.QueryBuilder {
  return db('payment_links as l')
    .join('organizations as o', 'o.id', 'l.organization_id')
    .join('currencies as c', 'c.code', 'l.currency')
    .select('l.*', 'o.name as organization_name', 'c.exponent');
}

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

export interface ListLinksFilter {
  kind?: PaymentLinkKind;
  limit: number;
  startingAfter?: string;
}

export const paymentLinksRepository = {
  /** Creates the account's Checkout unless one exists; returns the new id, or null when one existed. */
  async insertCheckoutIfAbsent(trx: Db, link: NewLink): Promise<string | null> {
    const rows = (await trx('payment_links')
      .insert(linkColumns({ ...link, kind: 'checkout' }))
      .onConflict(trx.raw(`(destination_account_id) WHERE kind = 'checkout'`))
      .ignore()
      .returning('id')) as Array<{ id: string }>;
    return rows[0]?.id ?? null;
  },

  async insertLink(trx: Db, link: NewLink): Promise<string> {
    const [row] = (await trx('payment_links').insert(linkColumns(link)).returning('id')) as Array<{ id: string }>;
    return (row as { id: string }).id;
  },

  async findCheckoutForAccount(db: Db, destinationAccountId: string): Promise<PaymentLink | undefined> {
    const row = (await selectLinks(db).where({ 'l.destination_account_id': destinationAccountId, 'l.kind': 'checkout' }).first()) as LinkRow | undefined;
    return row ? toLink(row) : undefined;
  },

  async findById(db: Db, organizationId: string, linkId: string): Promise<PaymentLink | undefined> {
    const row = (await selectLinks(db).where({ 'l.id': linkId, 'l.organization_id': organizationId }).first()) as LinkRow | undefined;
    return row ? toLink(row) : undefined;
  },

  /** For the public page only: the link a signed form token names (no organisation in scope). */
  async findByIdForPayment(db: Db, linkId: string): Promise<PublicPaymentLink | undefined> {
    const row = (await selectPublicLinks(db).where({ 'l.id': linkId }).first()) as PublicLinkRow | undefined;
    return row ? toPublicLink(row) : undefined;
  },

  /** For the public page only: the link behind a public code, with its organisation's standing. */
  async findByCode(db: Db, code: string): Promise<PublicPaymentLink | undefined> {
    const row = (await selectPublicLinks(db).where({ 'l.code': code }).first()) as PublicLinkRow | undefined;
    return row ? toPublicLink(row) : undefined;
  },

  /** Locks a link row (payments on one link are serialised by it). */
  async lock(trx: Knex.Transaction, linkId: string): Promise<boolean> {
    const row = await trx('payment_links').where({ id: linkId }).forUpdate().first('id');
    return row !== undefined;
  },

  /** Newest first; `limit + 1` rows so the caller knows whether more exist. */
  async list(db: Db, organizationId: string, filter: ListLinksFilter): Promise<PaymentLink[]> {
    const query = selectLinks(db).where('l.organization_id', organizationId);
    if (filter.kind) query.andWhere('l.kind', filter.kind);
    if (filter.startingAfter) {
      query.andWhereRaw('(l.created_at, l.id) < (SELECT p.created_at, p.id FROM payment_links p WHERE p.id = ? AND p.organization_id = ?)', [
        filter.startingAfter,
        organizationId,
      ]);
    }
    const rows = (await query.orderBy([{ column: 'l.created_at', order: 'desc' }, { column: 'l.id', order: 'desc' }]).limit(filter.limit + 1)) as LinkRow[];
    const now = Date.now();
    return rows.map((row) => toLink(row, now));
  },

  async exists(db: Db, organizationId: string, linkId: string): Promise<boolean> {
    return (await db('payment_links').where({ id: linkId, organization_id: organizationId }).first('id')) !== undefined;
  },

  async setStatus(trx: Db, linkId: string, status: 'active' | 'inactive' | 'completed'): Promise<void> {
    const changes: Record<string, unknown> = { status, updated_at: trx.fn.now() };
    if (status === 'inactive') changes.deactivated_at = trx.fn.now();
    if (status === 'completed') changes.completed_at = trx.fn.now();
    if (status === 'active') changes.deactivated_at = null;
    await trx('payment_links').where({ id: linkId }).update(changes);
  },

  async setRequireSignedAmount(trx: Db, linkId: string, value: boolean): Promise<void> {
    await trx('payment_links').where({ id: linkId }).update({ require_signed_amount: value, updated_at: trx.fn.now() });
  },
};
