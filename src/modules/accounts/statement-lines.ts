import type { AccountEntry } from '../ledger';

/** Removes control characters and caps the length of text coming from posting metadata. */
export function cleanText(value: string | null | undefined, max = 200): string | null {
  if (value == null) return null;
  // eslint-disable-next-line no-control-regex
  const text = value.replace(/[\x00-\x1F\x7F]+/g, ' ').replace(/\s+/g, ' ').trim();
  if (!text) return null;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** `payment.received` -> `Payment received`; `wallet.top_up` -> `Wallet top up`. */
export function humanizeKind(kind: string): string {
  const words = kind.replace(/[._]+/g, ' ').trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : 'Ledger posting';
}

/** Statement labels of posting kinds whose words alone would read badly. */
const POSTING_KIND_LABELS: Record<string, string> = {
  'payment_link.payment': 'Payment received',
};

/**
 * What a statement line says: the posting's own `metadata.description` when it has one,
 * otherwise its kind's label (POSTING_KIND_LABELS, else the kind in words), followed by the
 * business reference (`metadata.reference`) when there is one.
 */
export function describePosting(entry: Pick<AccountEntry, 'postingKind' | 'description' | 'reference'>): string {
  const own = cleanText(entry.description);
  if (own) return own;
  const reference = cleanText(entry.reference, 100);
  const label = POSTING_KIND_LABELS[entry.postingKind] ?? humanizeKind(entry.postingKind);
  return reference ? `${label} - ${reference}` : label;
}

const KIND_LABELS: Record<string, string> = {
  external_clearing: 'External payment network',
  wallet: 'Platform wallet',
  escrow_holding: 'Escrow holding',
  tontine_pool: 'Tontine pool',
  rail_transit: 'Payout rail',
  fees: 'Fees',
};

/** How the counterparty's owner may be named: its organisation's name, the label of its organisation account. */
export interface CounterpartyNames {
  organizationName: string | null;
  accountLabel: string | null;
}

/**
 * The other side of the posting, named without exposing personal data: the posting's own
 * `metadata.counterparty` when it has one; an account of the same organisation by its label;
 * another organisation by its name; platform accounts by their role.
 */
export function describeCounterparty(entry: Pick<AccountEntry, 'counterpartyText' | 'counterparty'>, names: CounterpartyNames, organizationId: string): string | null {
  const own = cleanText(entry.counterpartyText);
  if (own) return own;
  const other = entry.counterparty;
  if (!other) return null;
  const otherOrganizationId = other.ownerType === 'organization' ? other.ownerId : null;
  if (other.kind === 'org_account' || otherOrganizationId) {
    if (otherOrganizationId === organizationId && names.accountLabel) return cleanText(names.accountLabel);
    return cleanText(names.organizationName) ?? 'Organisation account';
  }
  if (other.kind === 'rail_transit' && other.externalRef) {
    return `Payout rail (${cleanText(other.externalRef, 60)})`;
  }
  return KIND_LABELS[other.kind] ?? humanizeKind(other.kind);
}
