import type { Knex } from 'knex';
import { DEFAULT_PAGE_LIMIT } from '../../contract';
import { systemClock, type Clock } from '../../clock';
import { withTransaction } from '../../db/transaction';
import { NotFoundError, ValidationError } from '../../errors';
import type { AccountService, OrgAccount } from '../accounts';
import { EventRepository } from '../events';
import { formatMinor, parseAmount } from '../ledger';
import { generateLinkCode, signAmount } from './link-security';
import {
  DestinationAccountInactive,
  destinationAccountNotFound,
  PaymentLinkNotActive,
  PaymentLinkNotFound,
} from './payment-links-errors';
import { linkView, linkViews } from './link-views';
import { PaymentLinksRepository, type LinkRecord } from './payment-links-repository';
import { maxMinorFor, publicUrlOf, type PaymentLink, type PaymentLinkKind, type SignedAmountLink } from './payment-links-types';
import { paymentLinkSnapshot } from './payment-link-snapshot';
import { readConnection } from '../../db/read-routing';

export interface CreateLinkInput {
  destinationAccountId: string;
  amount?: number | string;
  minimumAmount?: number | string;
  maximumAmount?: number | string;
  description?: string;
  reference?: string;
  expiresAt?: string;
  requireSignedAmount?: boolean;
}

export interface SignedAmountInput {
  amount: number | string;
  reference: string;
  expiresInSeconds?: number;
}

/** A reference or description shown to customers: printable text only. */
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;
export const MAX_LINK_LIFETIME_MS = 366 * 24 * 3600 * 1000;

export function checkPrintable(field: string, value: string | undefined, max: number): string | null {
  if (value === undefined) return null;
  if (!PRINTABLE.test(value)) throw ValidationError.field(field, `${field.replace(/^body\./, '')} contains control characters.`);
  const trimmed = value.trim();
  if (trimmed.length === 0) throw ValidationError.field(field, `${field.replace(/^body\./, '')} must not be blank.`);
  if (trimmed.length > max) throw ValidationError.field(field, `${field.replace(/^body\./, '')} is longer than ${max} characters.`);
  return trimmed;
}

/**
 * Throws a ValidationError when `amountMinor` may not be paid on `link`: another amount than a
 * fixed one, outside the link's bounds, or above the platform maximum.
 */
export function checkAmountForLink(link: PaymentLink, amountMinor: bigint, field = 'amount'): void {
  const show = (minor: bigint) => `${formatMinor(minor, link.exponent)} ${link.currency}`;
  if (link.amountMinor !== null && amountMinor !== link.amountMinor) {
    throw ValidationError.field(field, `This link has a fixed amount of ${show(link.amountMinor)}.`);
  }
  if (link.minimumAmountMinor !== null && amountMinor < link.minimumAmountMinor) {
    throw ValidationError.field(field, `The amount must be at least ${show(link.minimumAmountMinor)}.`);
  }
  if (link.maximumAmountMinor !== null && amountMinor > link.maximumAmountMinor) {
    throw ValidationError.field(field, `The amount must be at most ${show(link.maximumAmountMinor)}.`);
  }
  if (amountMinor > maxMinorFor(link.exponent)) throw ValidationError.field(field, 'The amount is too large.');
}

/** Payment links and the permanent Checkout of an organisation's accounts. */
export class PaymentLinksService {
  constructor(
    private readonly knex: Knex,
    private readonly accounts: AccountService,
    private readonly options: { payUrl: string; paySecret: string; clock?: Clock },
  ) {
    this.clock = options.clock ?? systemClock;
  }

  private readonly clock: Clock;

  /** The organisation's account (400 when it is not the organisation's), which must be active (409). */
  private async destination(trx: Knex.Transaction, organizationId: string, accountId: string): Promise<OrgAccount> {
    let account: OrgAccount;
    try {
      account = await this.accounts.getAccountForOrganization(organizationId, accountId, trx);
    } catch (error) {
      if (error instanceof NotFoundError) throw destinationAccountNotFound();
      throw error;
    }
    if (account.status !== 'active') throw new DestinationAccountInactive(account.id);
    return account;
  }

  /**
   * The Checkout of a destination account, created on first call. Concurrent first calls all
   * get the same Checkout: the insert does nothing when another one won the unique index,
   * then everyone reads the winner. A deactivated Checkout is reactivated (same code).
   * `requireSignedAmount`, when given, sets whether its page accepts only signed amounts.
   */
  getOrCreateCheckout(
    organizationId: string,
    userId: string,
    input: { destinationAccountId: string; requireSignedAmount?: boolean },
    db: Knex | Knex.Transaction = this.knex,
  ): Promise<PaymentLink> {
    return withTransaction(db, async (trx) => {
      const links = new PaymentLinksRepository(trx);
      const account = await this.destination(trx, organizationId, input.destinationAccountId);
      const createdId = await links.insertCheckoutIfAbsent({
        organizationId,
        kind: 'checkout',
        code: generateLinkCode(),
        destinationAccountId: account.id,
        currency: account.currency,
        requireSignedAmount: input.requireSignedAmount ?? false,
        createdBy: userId,
      });
      if (createdId) await recordLinkEvent(trx, this.options.payUrl, 'checkout.created', organizationId, createdId, userId, this.clock());
      let checkout = await links.findCheckoutForAccount(account.id);
      if (!checkout) throw new Error(`the Checkout of account ${account.id} vanished after a conflicting insert`);
      if (checkout.status === 'inactive') await links.setStatus(checkout.id, 'active');
      if (input.requireSignedAmount !== undefined && input.requireSignedAmount !== checkout.requireSignedAmount) {
        await links.setRequireSignedAmount(checkout.id, input.requireSignedAmount);
      }
      if (checkout.status === 'inactive' || (input.requireSignedAmount !== undefined && input.requireSignedAmount !== checkout.requireSignedAmount)) {
        checkout = (await links.findCheckoutForAccount(account.id)) as LinkRecord;
      }
      return linkView(trx, checkout, this.clock());
    });
  }

  /** A one-off link: a fixed amount, or an amount the customer chooses within optional bounds. */
  createLink(db: Knex | Knex.Transaction, organizationId: string, userId: string, input: CreateLinkInput): Promise<PaymentLink> {
    const now = this.clock();
    return withTransaction(db, async (trx) => {
      const links = new PaymentLinksRepository(trx);
      const account = await this.destination(trx, organizationId, input.destinationAccountId);
      const { exponent } = account;
      const max = maxMinorFor(exponent);
      const amount = (value: number | string | undefined, field: string): bigint | null => {
        if (value === undefined) return null;
        const minor = parseAmount(value, exponent, { field });
        if (minor > max) throw ValidationError.field(field, `${field.replace(/^body\./, '')} is too large.`);
        return minor;
      };
      const amountMinor = amount(input.amount, 'body.amount');
      const minimum = amount(input.minimumAmount, 'body.minimum_amount');
      const maximum = amount(input.maximumAmount, 'body.maximum_amount');
      if (amountMinor !== null && (minimum !== null || maximum !== null)) {
        throw ValidationError.field('body.amount', 'Give either a fixed amount or minimum/maximum bounds, not both.');
      }
      if (minimum !== null && maximum !== null && minimum > maximum) {
        throw ValidationError.field('body.minimum_amount', 'minimum_amount must not exceed maximum_amount.');
      }
      let expiresAt: Date | null = null;
      if (input.expiresAt !== undefined) {
        expiresAt = new Date(input.expiresAt);
        if (Number.isNaN(expiresAt.getTime())) throw ValidationError.field('body.expires_at', 'expires_at must be a date-time.');
        if (expiresAt.getTime() <= now.getTime()) throw ValidationError.field('body.expires_at', 'expires_at must be in the future.');
        if (expiresAt.getTime() - now.getTime() > MAX_LINK_LIFETIME_MS) {
          throw ValidationError.field('body.expires_at', 'expires_at must be within one year.');
        }
      }
      const id = await links.insertLink({
        organizationId,
        kind: 'link',
        code: generateLinkCode(),
        destinationAccountId: account.id,
        currency: account.currency,
        amountMinor,
        minimumAmountMinor: minimum,
        maximumAmountMinor: maximum,
        description: checkPrintable('body.description', input.description, 500),
        reference: checkPrintable('body.reference', input.reference, 128),
        requireSignedAmount: input.requireSignedAmount ?? false,
        expiresAt,
        createdBy: userId,
      });
      await recordLinkEvent(trx, this.options.payUrl, 'payment_link.created', organizationId, id, userId, now);
      return linkView(trx, (await links.findById(organizationId, id)) as LinkRecord, now);
    });
  }

  async getLink(organizationId: string, linkId: string, db: Knex | Knex.Transaction = this.knex): Promise<PaymentLink> {
    const link = await new PaymentLinksRepository(db).findById(organizationId, linkId);
    if (!link) throw new PaymentLinkNotFound();
    return linkView(db, link, this.clock());
  }

  /** Newest first, `limit + 1` links (see toPage); 400 when the cursor is not one of the organisation's links. */
  async listLinks(organizationId: string, filter: { kind?: PaymentLinkKind; limit?: number; startingAfter?: string }): Promise<PaymentLink[]> {
    const now = this.clock();
    const db = readConnection(this.knex);
    const records = await new PaymentLinksRepository(db).list(organizationId, { ...filter, limit: filter.limit ?? DEFAULT_PAGE_LIMIT });
    return linkViews(db, records, now);
  }

  /** Links are deactivated, never deleted. Deactivating an inactive link changes nothing. */
  deactivate(db: Knex | Knex.Transaction, organizationId: string, linkId: string): Promise<PaymentLink> {
    return withTransaction(db, async (trx) => {
      const links = new PaymentLinksRepository(trx);
      if (!(await links.exists(organizationId, linkId))) throw new PaymentLinkNotFound();
      await links.lock(linkId);
      const link = await linkView(trx, (await links.findById(organizationId, linkId)) as LinkRecord, this.clock());
      if (link.status === 'completed') throw new PaymentLinkNotActive(link.status);
      if (link.status === 'inactive') return link;
      await links.setStatus(linkId, 'inactive');
      await recordLinkEvent(trx, this.options.payUrl, 'payment_link.deactivated', organizationId, linkId, null, this.clock());
      return linkView(trx, (await links.findById(organizationId, linkId)) as LinkRecord, this.clock());
    });
  }

  /**
   * A tamper-proof `link_with_amount`: the amount, the reference and an expiry signed with
   * PAY_SECRET (`sig`, `exp`); the payment page refuses the URL once any of them is edited.
   */
  async signAmount(db: Knex | Knex.Transaction, organizationId: string, linkId: string, input: SignedAmountInput): Promise<SignedAmountLink> {
    const now = this.clock();
    const link = await this.getLink(organizationId, linkId, db);
    if (link.status !== 'active') throw new PaymentLinkNotActive(link.status);
    const amountMinor = parseAmount(input.amount, link.exponent, { field: 'body.amount' });
    checkAmountForLink(link, amountMinor, 'body.amount');
    const reference = checkPrintable('body.reference', input.reference, 128) as string;
    if (link.reference !== null && reference !== link.reference) {
      throw ValidationError.field('body.reference', `This link has the fixed reference "${link.reference}".`);
    }
    const lifetime = input.expiresInSeconds ?? 86_400;
    let expiresAtSeconds = Math.floor(now.getTime() / 1000) + lifetime;
    if (link.expiresAt) expiresAtSeconds = Math.min(expiresAtSeconds, Math.floor(link.expiresAt.getTime() / 1000));
    const sig = signAmount(this.options.paySecret, { linkId: link.id, amountMinor, reference, expiresAt: expiresAtSeconds });
    const query = new URLSearchParams({
      amount: formatMinor(amountMinor, link.exponent),
      reference,
      exp: String(expiresAtSeconds),
      sig,
    });
    return {
      link,
      amountMinor,
      reference,
      expiresAt: new Date(expiresAtSeconds * 1000),
      url: `${publicUrlOf(this.options.payUrl, link.code)}?${query.toString()}`,
    };
  }
}

/** Records a link's event in the transaction of its change; its object is taken just before COMMIT (paymentLinkSnapshot). */
async function recordLinkEvent(trx: Knex.Transaction, payUrl: string, type: string, organizationId: string, linkId: string, actorUserId: string | null, at: Date): Promise<void> {
  const snapshot = (db: Knex | Knex.Transaction, id: string, when: Date) => paymentLinkSnapshot(db, id, when, payUrl);
  await new EventRepository(trx).record({ subjectType: 'payment_link', subjectId: linkId, type, actorUserId, occurredAt: at, organizationId, snapshot });
}
