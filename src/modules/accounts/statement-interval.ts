import { ValidationError, type FieldIssue } from '../../errors';
import type { StatementInterval } from './account-types';

const DAY_MS = 86_400_000;
/** Longest statement interval, as Wise: 469 days. */
export const MAX_STATEMENT_DAYS = 469;
/** Interval when `from` is absent: the 30 days before `to`. */
export const DEFAULT_STATEMENT_DAYS = 30;

export interface StatementRange {
  from?: string | Date;
  to?: string | Date;
}

/** The interval, and the `to` that was asked for when the settle margin capped it. */
export interface ResolvedInterval extends StatementInterval {
  requestedTo: Date | null;
}

/** Fractional seconds beyond milliseconds that are not all zeros (2026-01-01T00:00:00.1234Z). */
const SUB_MILLISECOND = /\.[0-9]{3}([0-9]*)/;

function parseInstant(value: string | Date | undefined, name: string, issues: FieldIssue[]): Date | undefined {
  if (value === undefined) return undefined;
  const field = `query.${name}`;
  if (typeof value === 'string' && /[1-9]/.test(SUB_MILLISECOND.exec(value)?.[1] ?? '')) {
    issues.push({ field, message: `${name} is precise to the millisecond at most (three fractional digits), such as 2026-01-31T00:00:00.123Z.` });
    return undefined;
  }
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) {
    issues.push({ field, message: `${name} must be an ISO 8601 date-time with a time zone, such as 2026-01-31T00:00:00Z.` });
    return undefined;
  }
  return date;
}

/** `from` and `to` as given (either may be absent); 400 ValidationError naming `query.<name>` when unreadable. */
export function parseRange(range: StatementRange): { from?: Date; to?: Date } {
  const issues: FieldIssue[] = [];
  const from = parseInstant(range.from, 'from', issues);
  const to = parseInstant(range.to, 'to', issues);
  if (issues.length) throw new ValidationError(issues[0]?.message ?? 'Invalid interval.', issues);
  return { from, to };
}

/**
 * The statement interval [from, to). `settledUntil` is the latest instant a statement may
 * cover (now minus the settle margin): `to` defaults to it and is capped at it; `from`
 * defaults to 30 days before `to`. Refuses from >= to and intervals longer than 469 days with
 * a 400 ValidationError (fields named `query.<name>`).
 */
export function resolveInterval(range: StatementRange, settledUntil: Date): ResolvedInterval {
  const { from: fromGiven, to: toGiven } = parseRange(range);
  const capped = toGiven !== undefined && toGiven.getTime() > settledUntil.getTime();
  const to = toGiven === undefined || capped ? settledUntil : toGiven;
  const from = fromGiven ?? new Date(to.getTime() - DEFAULT_STATEMENT_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime()) {
    const detail = to === settledUntil ? ` (\`to\` defaults to and is capped at ${settledUntil.toISOString()}: entries of the last seconds are not final yet)` : '';
    throw ValidationError.field('query.from', `\`from\` must be earlier than \`to\` (the interval is [from, to))${detail}.`);
  }
  if (to.getTime() - from.getTime() > MAX_STATEMENT_DAYS * DAY_MS) {
    throw ValidationError.field('query.to', `A statement covers at most ${MAX_STATEMENT_DAYS} days: shorten the interval between \`from\` and \`to\`.`);
  }
  return { from, to, requestedTo: capped ? (toGiven as Date) : null };
}

/**
 * Whether [from, to) obeys the rules resolveInterval enforces: from before to, at most
 * MAX_STATEMENT_DAYS long, and not past `settledUntil`.
 */
export function isStatementInterval(interval: StatementInterval, settledUntil: Date): boolean {
  const from = interval.from.getTime();
  const to = interval.to.getTime();
  return from < to && to - from <= MAX_STATEMENT_DAYS * DAY_MS && to <= settledUntil.getTime();
}
