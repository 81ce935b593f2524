import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Clock } from '../../clock';
import type { IdempotentResource } from '../../contract';
import { Keyset, toPage, type Page, type PageRequest } from '../../db/keyset';
import { readConnection } from '../../db/read-routing';
import { ValidationError } from '../../errors';
import type { Notifier } from '../notifications';
import { applyDecision, CLAIMED, readLocked } from '../writes';
import { assertCryptoTier, requireCryptoTier } from './crypto-access';
import { checkAddress } from './crypto-addresses';
import { cryptoCatalog, type AssetCode, type NetworkCode } from './crypto-catalog';
import { InvalidAddressError } from './crypto-errors';

export interface WithdrawalAddressRow {
  id: string;
  user_id: string;
  asset: string;
  network: string;
  address: string;
  label: string;
  memo: string | null;
  active_at: Date | string;
  created_at: Date | string;
}

/** The contract's `CryptoWithdrawalAddress`: `pending` until `active_at`, `active` after. */
export function presentWithdrawalAddress(row: WithdrawalAddressRow, now: Date) {
  const activeAt = new Date(row.active_at);
  return {
    id: row.id,
    object: 'crypto_withdrawal_address' as const,
    asset: row.asset.trim() as AssetCode,
    network: row.network as NetworkCode,
    address: row.address,
    label: row.label,
    memo: row.memo,
    status: activeAt.getTime() <= now.getTime() ? ('active' as const) : ('pending' as const),
    active_at: activeAt.toISOString(),
    created_at: new Date(row.created_at).toISOString(),
  };
}

export type WithdrawalAddressView = ReturnType<typeof presentWithdrawalAddress>;

export interface NewWithdrawalAddress {
  asset: string;
  network: string;
  address: string;
  label: string;
  memo?: string;
}

const ADDRESSES = new Keyset({ table: 'crypto_withdrawal_addresses', alias: 'w', noun: 'a withdrawal address of yours' });

/**
 * The address book withdrawals go to: an address is checked against its network's format
 * (checksums included) when added, and usable only `activationSeconds` later, so an address
 * slipped in by whoever took over a session can be noticed (the owner is told at once) before
 * money can leave to it.
 */
export class CryptoWithdrawalAddressService {
  constructor(private readonly deps: { knex: Knex; clock: Clock; notifier: Notifier; activationSeconds: number }) {}

  async create(trx: Knex.Transaction, userId: string, input: NewWithdrawalAddress): Promise<{ view: WithdrawalAddressView; resource: IdempotentResource }> {
    const network = cryptoCatalog.network(input.network);
    if (!network || !cryptoCatalog.carries(input.asset, input.network)) throw ValidationError.field('network', `${input.asset} is not carried on ${input.network}: see GET /crypto/assets.`);
    const read = await readLocked<{ tier: string; email: string | null; phone: string | null }>(
      trx,
      `SELECT u.tier, u.email, u.phone FROM users u WHERE u.id = ? AND ${CLAIMED} FOR NO KEY UPDATE OF u`,
      [userId],
    );
    assertCryptoTier(read?.tier);
    const checked = checkAddress(network.addressFormat, input.address);
    if (!checked.ok) throw new InvalidAddressError(network.code, checked.reason);
    const now = this.deps.clock();
    const row: WithdrawalAddressRow = {
      id: crypto.randomUUID(),
      user_id: userId,
      asset: input.asset,
      network: network.code,
      address: checked.address,
      label: input.label,
      memo: input.memo ?? null,
      active_at: new Date(now.getTime() + this.deps.activationSeconds * 1000),
      created_at: now,
    };
    const view = presentWithdrawalAddress(row, now);
    const resource: IdempotentResource = { type: 'crypto_withdrawal_address', id: row.id, status: view.status, location: `/api/crypto/withdrawal-addresses/${row.id}` };
    await applyDecision(trx, {
      changes: [
        {
          table: 'crypto_withdrawal_addresses',
          op: 'insert',
          id: row.id,
          set: { user_id: userId, asset: row.asset, network: row.network, address: row.address, label: row.label, memo: row.memo, active_at: view.active_at, created_at: view.created_at },
        },
      ],
      answer: { resource },
    });
    const to = read?.email ? { to: read.email, channel: 'email' as const } : read?.phone ? { to: read.phone, channel: 'sms' as const } : undefined;
    if (to) {
      await this.deps.notifier.send(trx, {
        ...to,
        template: 'crypto_withdrawal_address_added',
        body: `A ${row.asset} withdrawal address on ${network.name} (${row.address.slice(0, 8)}...${row.address.slice(-4)}, "${row.label}") was added to your account. It becomes usable on ${view.active_at.slice(0, 16).replace('T', ' ')} UTC. If it was not you, secure your account now.`,
      });
    }
    return { view, resource };
  }

  async list(userId: string, request: PageRequest): Promise<Page<WithdrawalAddressView>> {
    await requireCryptoTier(this.deps.knex, userId);
    const db = readConnection(this.deps.knex);
    const rows = await ADDRESSES.rows<WithdrawalAddressRow>(db, db('crypto_withdrawal_addresses as w').select('w.*').where('w.user_id', userId), { user_id: userId }, request);
    const now = this.deps.clock();
    const page = toPage(rows, request.limit);
    return { ...page, data: page.data.map((row) => presentWithdrawalAddress(row, now)) };
  }
}
