import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import { minorToNumber, toBigInt } from '../ledger';
import { CLAIMED, readLocked } from '../writes';
import type { MobileMoneyProvider } from './mobile-money-rail';
import type { TopUp, TopUpStatus } from './top-up-settlement';

type Db = Knex | Knex.Transaction;

export interface TopUpRow {
  id: string;
  user_id: string;
  wallet_id: string;
  currency: string;
  amount_minor: string | number;
  method: 'mobile_money';
  provider: MobileMoneyProvider;
  msisdn: string;
  status: TopUpStatus;
  provider_reference: string;
  failure_code: string | null;
  posting_id: string | null;
  settled_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

/** A top-up with its currency's exponent (what presenting it needs). */
export interface LockedTopUp {
  topUp: TopUp;
  exponent: number;
}

const TOP_UPS = new Keyset({ table: 'top_ups', alias: 't', noun: 'a top-up of this wallet' });

const date = (value: Date | string) => (value instanceof Date ? value : new Date(value));

export function toTopUp(row: TopUpRow): TopUp {
  return {
    id: row.id,
    userId: row.user_id,
    walletId: row.wallet_id,
    currency: row.currency,
    amountMinor: toBigInt(row.amount_minor),
    method: row.method,
    provider: row.provider,
    msisdn: row.msisdn,
    status: row.status,
    providerReference: row.provider_reference,
    failureCode: row.failure_code,
    postingId: row.posting_id,
    settledAt: row.settled_at === null ? null : date(row.settled_at),
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
  };
}

/** The row a decision inserts (JSON: the amount as a string, dates as ISO strings). */
export function toInsert(topUp: TopUp): Record<string, unknown> {
  return {
    user_id: topUp.userId,
    wallet_id: topUp.walletId,
    currency: topUp.currency,
    amount_minor: topUp.amountMinor.toString(),
    method: topUp.method,
    provider: topUp.provider,
    msisdn: topUp.msisdn,
    status: topUp.status,
    provider_reference: topUp.providerReference,
    created_at: topUp.createdAt.toISOString(),
    updated_at: topUp.updatedAt.toISOString(),
  };
}

/** The API's TopUp. */
export function presentTopUp(topUp: TopUp, exponent: number) {
  return {
    id: topUp.id,
    object: 'top_up' as const,
    status: topUp.status,
    wallet_id: topUp.walletId,
    amount: minorToNumber(topUp.amountMinor, exponent),
    amount_minor: topUp.amountMinor.toString(),
    currency: topUp.currency,
    method: topUp.method,
    provider: topUp.provider,
    msisdn: topUp.msisdn,
    provider_reference: topUp.providerReference,
    failure_code: topUp.failureCode,
    created_at: topUp.createdAt.toISOString(),
    updated_at: topUp.updatedAt.toISOString(),
    settled_at: topUp.settledAt?.toISOString() ?? null,
  };
}

export type TopUpView = ReturnType<typeof presentTopUp>;

/** The wallet a top-up is asked for, as the request's read finds it. */
export interface WalletForTopUp {
  wallet_id: string;
  owner_id: string;
  currency: string;
  exponent: number;
}

export class TopUpRepository {
  constructor(private readonly db: Db) {}

  /** The request's read (after its key's claim): the user's wallet and its currency's exponent. */
  readWallet(trx: Knex.Transaction, walletId: string, userId: string): Promise<WalletForTopUp | undefined> {
    return readLocked<WalletForTopUp>(
      trx,
      `SELECT a.id AS wallet_id, a.owner_id, a.currency, cur.exponent
         FROM ledger_accounts a JOIN currencies cur ON cur.code = a.currency
        WHERE a.id = ?::uuid AND a.owner_type = 'user' AND a.owner_id = ?::uuid AND a.kind = 'wallet' AND ${CLAIMED}`,
      [walletId, userId],
    );
  }

  /** The top-up of a provider reference, locked, with its exponent (a settlement's read). */
  async lockByReference(trx: Knex.Transaction, providerReference: string): Promise<LockedTopUp | undefined> {
    const row = await readLocked<TopUpRow & { exponent: number }>(
      trx,
      `SELECT t.*, cur.exponent FROM top_ups t JOIN currencies cur ON cur.code = t.currency
        WHERE t.provider_reference = ? AND ${CLAIMED} FOR UPDATE OF t`,
      [providerReference],
    );
    return row ? { topUp: toTopUp(row), exponent: Number(row.exponent) } : undefined;
  }

  async find(walletId: string, topUpId: string): Promise<TopUp | undefined> {
    const row = await this.db<TopUpRow>('top_ups').where({ id: topUpId, wallet_id: walletId }).first();
    return row ? toTopUp(row) : undefined;
  }

  async findById(topUpId: string): Promise<TopUp | undefined> {
    const row = await this.db<TopUpRow>('top_ups').where({ id: topUpId }).first();
    return row ? toTopUp(row) : undefined;
  }

  async statusOf(topUpId: string): Promise<TopUpStatus | undefined> {
    return (await this.db<TopUpRow>('top_ups').where({ id: topUpId }).first('status'))?.status;
  }

  /** One page of a wallet's top-ups, newest first (`limit + 1` rows). */
  async page(walletId: string, request: PageRequest): Promise<TopUp[]> {
    const query = this.db('top_ups as t').where('t.wallet_id', walletId).select('t.*');
    return (await TOP_UPS.rows<TopUpRow>(this.db, query, { wallet_id: walletId }, request)).map(toTopUp);
  }

  /** The provider references of top-ups pending since before `before`, oldest first. */
  async pendingSince(before: Date, limit: number): Promise<string[]> {
    const rows = await this.db<TopUpRow>('top_ups').where('status', 'pending').andWhere('created_at', '<', before).orderBy('created_at').limit(limit).select('provider_reference');
    return rows.map((row) => row.provider_reference);
  }

  /** Records a callback's webhook-id; false when it was already recorded (a replay). */
  async recordCallback(trx: Knex.Transaction, webhookId: string, now: Date): Promise<boolean> {
    const inserted = await trx('rail_callbacks').insert({ webhook_id: webhookId, received_at: now }).onConflict('webhook_id').ignore().returning('webhook_id');
    return (inserted as unknown[]).length === 1;
  }

  /** Forgets the callback ids received before `before` (their timestamps are refused by then). */
  async forgetCallbacks(before: Date): Promise<number> {
    const deleted = await this.db('rail_callbacks').where('received_at', '<', before).del();
    return typeof deleted === 'number' ? deleted : 0;
  }
}
