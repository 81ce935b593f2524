import { purposeMacBytes, safeEqual } from '../../signing';

/** What a statement cursor carries: the last line's entry and the interval of the pages. */
export interface StatementPageCursor {
  entryId: string;
  from: Date;
  to: Date;
  /** The `to` the first page was asked with when it was capped to the settle margin. */
  requestedTo: Date | null;
}

/** Largest PostgreSQL bigint (ledger entry ids, hence statement cursors). */
const MAX_BIGINT = 9_223_372_036_854_775_807n;
const CURSOR_PATTERN = /^v1:([1-9][0-9]{0,18}):(-?[0-9]{1,16}):(-?[0-9]{1,16}):(-?[0-9]{1,16})?$/;
/** The HMAC purpose of statement cursors (see src/signing.ts). */
const CURSOR_PURPOSE = 'accounts/statement-cursor';
const CURSOR_MAC_BYTES = 32;
/** Longest cursor: a 76-byte body and its 32-byte signature, base64url. */
const MAX_STATEMENT_CURSOR_LENGTH = 192;

/**
 * Opaque to clients: base64url of `v1:<entry id>:<from ms>:<to ms>:<requested to ms>` followed
 * by its HMAC-SHA256 under `secret` (PAY_SECRET), so a cursor that was forged or altered is
 * refused rather than read.
 */
export function encodeStatementCursor(secret: string, cursor: StatementPageCursor): string {
  const raw = Buffer.from(`v1:${cursor.entryId}:${cursor.from.getTime()}:${cursor.to.getTime()}:${cursor.requestedTo?.getTime() ?? ''}`, 'utf8');
  return Buffer.concat([raw, purposeMacBytes(secret, CURSOR_PURPOSE, raw)]).toString('base64url');
}

/** The cursor, or undefined when `value` is not one this API signed (forged, altered or truncated). */
export function decodeStatementCursor(secret: string, value: string): StatementPageCursor | undefined {
  if (value.length > MAX_STATEMENT_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(value)) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length <= CURSOR_MAC_BYTES) return undefined;
  const raw = bytes.subarray(0, bytes.length - CURSOR_MAC_BYTES);
  if (!safeEqual(purposeMacBytes(secret, CURSOR_PURPOSE, raw), bytes.subarray(raw.length))) return undefined;
  const match = CURSOR_PATTERN.exec(raw.toString('utf8'));
  if (!match) return undefined;
  const [, entryId, from, to, requestedTo] = match as unknown as [string, string, string, string, string | undefined];
  // Entry ids are bigint: a 19-digit value above its maximum is no entry (and PostgreSQL would
  // raise 22003 comparing it with the id column).
  if (BigInt(entryId) > MAX_BIGINT) return undefined;
  const dates = [from, to, requestedTo].map((ms) => (ms === undefined ? null : new Date(Number(ms))));
  if (dates.some((d) => d !== null && Number.isNaN(d.getTime()))) return undefined;
  return { entryId, from: dates[0] as Date, to: dates[1] as Date, requestedTo: dates[2] ?? null };
}
