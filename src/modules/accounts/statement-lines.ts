import type { StatementRow } from './account-repository';

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
export function describePosting(row: Pick<StatementRow, 'posting_kind' | 'meta_description' | 'meta_reference'>): string {
  const own = cleanText(row.meta_description);
  if (own) return own;
  const reference = cleanText(row.meta_reference, 100);
  const label = POSTING_KIND_LABELS[row.posting_kind] ?? humanizeKind(row.posting_kind);
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

/**
 * The other side of the posting, named without exposing personal data: the posting's own
 * `metadata.counterparty` when it has one; an account of the same organisation by its label;
 * another organisation by its name; platform accounts by their role.
 */
export function describeCounterparty(
  row: Pick<
    StatementRow,
    | 'meta_counterparty'
    | 'counterparty_kind'
    | 'counterparty_external_ref'
    | 'counterparty_org_id'
    | 'counterparty_org_name'
    | 'counterparty_account_label'
  >,
  organizationId: string,
): string | null {
  const own = cleanText(row.meta_counterparty);
  if (own) return own;
  if (!row.counterparty_kind) return null;
  if (row.counterparty_kind === 'org_account' || row.counterparty_org_id) {
    if (row.counterparty_org_id === organizationId && row.counterparty_account_label) return cleanText(row.counterparty_account_label);
    return cleanText(row.counterparty_org_name) ?? 'Organisation account';
  }
  if (row.counterparty_kind === 'rail_transit' && row.counterparty_external_ref) {
    return `Payout rail (${cleanText(row.counterparty_external_ref, 60)})`;
  }
  return KIND_LABELS[row.counterparty_kind] ?? humanizeKind(row.counterparty_kind);
}
