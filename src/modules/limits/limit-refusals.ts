import { ConflictError, DomainError } from '../../errors';
import { LIMITS, TIERS, nextTierOf, type LimitName, type Tier } from './limit-policy';

/** What ledger_post says of a LimitExceeded refusal (and write_apply passes on). */
export interface LimitRefusalDetail {
  account_id: string;
  owner_id: string | null;
  owner_type?: string | null;
  currency: string;
  /** 'out': the payer's own limit; 'in': the payee's. */
  direction: 'in' | 'out';
  limit: LimitName;
  limit_minor: string;
  remaining_minor: string;
  tier: Tier;
}

/** The refusal's detail, kept on the error (never rendered) for a caller that is the payee itself. */
const LIMIT_DETAIL = Symbol('limitDetail');

type LimitError = ConflictError & { [LIMIT_DETAIL]: LimitRefusalDetail; ownerId: string | null };

function isLimitDetail(value: unknown): value is LimitRefusalDetail {
  const detail = value as Partial<LimitRefusalDetail> | null;
  return (
    typeof detail === 'object' &&
    detail !== null &&
    (detail.direction === 'in' || detail.direction === 'out') &&
    (LIMITS as readonly unknown[]).includes(detail.limit) &&
    (TIERS as readonly unknown[]).includes(detail.tier) &&
    typeof detail.currency === 'string' &&
    /^[0-9]+$/.test(String(detail.limit_minor)) &&
    /^[0-9]+$/.test(String(detail.remaining_minor))
  );
}

/** 409 LimitExceeded: the caller's own limit, with what would lift it. */
export function limitExceeded(detail: LimitRefusalDetail): ConflictError {
  const error = new ConflictError('LimitExceeded', `This operation would exceed your ${detail.limit.replace('_', ' ')} limit in ${detail.currency} (tier ${detail.tier}).`, {
    limit: detail.limit,
    currency: detail.currency,
    limit_minor: detail.limit_minor,
    remaining_minor: detail.remaining_minor,
    tier: detail.tier,
    next_tier: nextTierOf(detail.tier),
  });
  return Object.assign(error, { [LIMIT_DETAIL]: detail, ownerId: detail.owner_id });
}

/** 409 RecipientCannotReceive: the payee's limit, saying nothing of its balance or tier. */
export function recipientCannotReceive(detail?: LimitRefusalDetail): ConflictError {
  const error = new ConflictError('RecipientCannotReceive', 'The recipient cannot receive this amount at the moment.');
  return detail ? Object.assign(error, { [LIMIT_DETAIL]: detail, ownerId: detail.owner_id }) : error;
}

/**
 * The one mapping of ledger_post's LimitExceeded: a payer's limit is the caller's own
 * (LimitExceeded with its details: in every money path the payer is the one who asked), a
 * payee's is someone else's (RecipientCannotReceive, nothing revealed). A path whose payee is
 * the caller itself (money put into one's own wallet) turns it back with `asOwnLimit`.
 */
export function limitRefusal(detail: unknown): ConflictError {
  if (!isLimitDetail(detail)) throw new TypeError(`ledger_post answered LimitExceeded with an unreadable detail: ${JSON.stringify(detail)}`);
  return detail.direction === 'out' ? limitExceeded(detail) : recipientCannotReceive(detail);
}

/** The limit refusal of a posting, told to the owner whose limit it is (`ownerId`), in full. */
export function asOwnLimit(error: unknown, ownerId: string): unknown {
  if (!(error instanceof DomainError)) return error;
  const detail = (error as Partial<LimitError>)[LIMIT_DETAIL];
  return detail && detail.owner_id === ownerId ? limitExceeded(detail) : error;
}

/** The detail of a limit refusal, for a path that acts on it (holding a payout): undefined for any other error. */
export function limitDetailOf(error: unknown): LimitRefusalDetail | undefined {
  return error instanceof DomainError ? (error as Partial<LimitError>)[LIMIT_DETAIL] : undefined;
}
