import type { Knex } from 'knex';
import { currencies, formatMinor, listAccounts, type LedgerAccount } from '../ledger';
import { readConnection } from '../../db/read-routing';

/** The API representation of a wallet (the contract's `Wallet`). */
export interface WalletView {
  id: string;
  currency: string;
  currency_exponent: number;
  balance: string;
  balance_minor: string;
  status: 'active' | 'frozen';
  created_at: string;
  updated_at: string;
}

export interface WalletList {
  object: 'list';
  data: WalletView[];
  has_more: boolean;
  next_cursor: string | null;
}

/** A user's wallets: one ledger account of kind `wallet` per currency, created on first use. */
export class WalletService {
  constructor(private readonly knex: Knex) {}

  async list(userId: string): Promise<WalletList> {
    const wallets = await listAccounts(readConnection(this.knex), { ownerType: 'user', ownerId: userId, kind: 'wallet' });
    const data = await Promise.all(wallets.map((wallet) => this.view(wallet)));
    return { object: 'list', data, has_more: false, next_cursor: null };
  }

  private async view(wallet: LedgerAccount): Promise<WalletView> {
    const { exponent } = await currencies.require(this.knex, wallet.currency);
    return {
      id: wallet.id,
      currency: wallet.currency,
      currency_exponent: exponent,
      balance: formatMinor(wallet.balanceMinor, exponent),
      balance_minor: wallet.balanceMinor.toString(),
      status: wallet.status,
      created_at: wallet.createdAt.toISOString(),
      updated_at: wallet.updatedAt.toISOString(),
    };
  }
}
