/** Domain types of the ledger (camelCase; the repository maps the snake_case rows). */

export type OwnerType = 'user' | 'organization' | 'platform';

export type AccountKind =
  | 'wallet' // a user's spendable balance, one per currency
  | 'org_account' // an organisation's account; several per currency, told apart by externalRef
  | 'escrow_holding' // money held for an escrow transaction (externalRef: its shard, see platformShardOf)
  | 'tontine_pool' // a tontine's pooled contributions (externalRef: the tontine id)
  | 'external_clearing' // platform: the outside world; the only kind that may go negative
  | 'rail_transit' // platform: money handed to a payout rail and not yet settled (externalRef: the rail)
  | 'fees'; // platform (or organisation) fee income

export type AccountStatus = 'active' | 'frozen';

export interface AccountIdentity {
  ownerType: OwnerType;
  /** users.id or organizations.id; null for platform accounts. */
  ownerId: string | null;
  currency: string;
  kind: AccountKind;
  /** Distinguishes several accounts of one owner, kind and currency; null otherwise. */
  externalRef?: string | null;
}

export interface LedgerAccount {
  id: string;
  ownerType: OwnerType;
  ownerId: string | null;
  currency: string;
  kind: AccountKind;
  externalRef: string | null;
  allowNegative: boolean;
  balanceMinor: bigint;
  status: AccountStatus;
  createdAt: Date;
  updatedAt: Date;
}

export interface EntryInput {
  accountId: string;
  /** Signed amount in minor units: negative debits the account, positive credits it. */
  amountMinor: bigint;
}

export interface PostingInput {
  /** Dotted lower-case name of the business event, e.g. `transfer.p2p`, `transfer.reversal`. */
  kind: string;
  /** Business id of the event (a transfer id...). (kind, reference) is unique: a second posting fails. */
  reference: string;
  metadata?: Record<string, unknown>;
  /** For corrections: the posting this one reverses. */
  reversesPostingId?: string;
  entries: EntryInput[];
}

export interface Entry {
  id: string;
  postingId: string;
  accountId: string;
  currency: string;
  amountMinor: bigint;
  createdAt: Date;
}

export interface Posting {
  id: string;
  kind: string;
  reference: string;
  metadata: Record<string, unknown>;
  reversesPostingId: string | null;
  createdAt: Date;
  entries: Entry[];
  /** Balance of each touched account right after the posting, by account id. */
  balancesAfter: Map<string, bigint>;
}

export type InvariantViolation =
  | { kind: 'currency_unbalanced'; currency: string; sumMinor: bigint }
  | { kind: 'posting_unbalanced'; postingId: string; currency: string; sumMinor: bigint }
  | { kind: 'balance_mismatch'; accountId: string; balanceMinor: bigint; entriesSumMinor: bigint }
  | { kind: 'negative_balance'; accountId: string; balanceMinor: bigint };
