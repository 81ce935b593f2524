import type { Knex } from 'knex';
import { ValidationError } from '../../errors';
import { LedgerReadModel, type AccountEntry, type EntryPosition, type StatementCheckpoints } from '../ledger';
import { OrganizationRepository } from '../organizations';
import { AccountRepository } from './account-repository';
import type { OrgAccount, StatementHeader, StatementInterval, StatementLine } from './account-types';
import { describeCounterparty, describePosting } from './statement-lines';

export interface StatementSummary {
  closingBalanceMinor: bigint;
  totalCreditsMinor: bigint;
  totalDebitsMinor: bigint;
  entryCount: number;
}

/** One JSON page: the interval's balances and totals, and its lines after the cursor. */
export interface StatementPageContent extends StatementHeader, StatementSummary {
  lines: StatementLine[];
  hasMore: boolean;
}

/**
 * Where a streamed statement goes (the HTTP handler writes CSV). Every method may wait (back
 * pressure); `aborted()` true stops the stream (the client went away).
 */
export interface StatementSink {
  start(header: StatementHeader): Promise<void>;
  lines(lines: StatementLine[]): Promise<void>;
  end(summary: StatementSummary): Promise<void>;
  aborted(): boolean;
}

const INVALID_CURSOR = 'starting_after must be the next_cursor of a previous page of this statement.';

/**
 * Reads one account's statement on `db`: a JSON page inside the caller's read-only REPEATABLE
 * READ transaction; a stream on the pool, one short query per batch:
 * the ledger's entries through the ledger read model, the counterparties' names through the
 * organisations module and this module's accounts. Balances before a point (opening, the
 * interval's totals, the running balance at a cursor) start from the ledger's day
 * checkpoints, so a page reads at most about a day of entries besides its lines, whatever the
 * account's age; checkpoints it had to compute go to `checkpoints`, for the caller to store
 * after the read.
 */
export class StatementReader {
  private readonly ledger: LedgerReadModel;

  constructor(
    private readonly db: Knex | Knex.Transaction,
    private readonly account: OrgAccount,
    checkpoints?: StatementCheckpoints,
  ) {
    this.ledger = new LedgerReadModel(db, checkpoints);
  }

  /** Up to `limit` lines after the cursor entry (`afterEntryId`, a signed, bigint-range entry id), each with its running balance. */
  async page(interval: StatementInterval, afterEntryId: string | undefined, limit: number): Promise<StatementPageContent> {
    const ledgerAccountId = this.account.ledgerAccountId;
    const after = afterEntryId === undefined ? undefined : await this.positionWithin(interval, afterEntryId);
    const start = await this.ledger.cumulative(ledgerAccountId, { before: interval.from });
    const end = await this.ledger.cumulative(ledgerAccountId, { before: interval.to });
    const opening = start.netMinor;
    const running = after ? (await this.ledger.cumulative(ledgerAccountId, { through: after })).netMinor : opening;
    const entries = await this.ledger.entries(ledgerAccountId, interval, after, limit + 1);
    return {
      account: this.account,
      interval,
      openingBalanceMinor: opening,
      closingBalanceMinor: end.netMinor,
      totalCreditsMinor: end.creditsMinor - start.creditsMinor,
      totalDebitsMinor: end.debitsMinor - start.debitsMinor,
      entryCount: Number(end.count - start.count),
      lines: await this.toLines(entries.slice(0, limit), running),
      hasMore: entries.length > limit,
    };
  }

  /** Every line of the interval to `sink`, `batchSize` entries at a time (memory holds one batch). */
  async stream(interval: StatementInterval, sink: StatementSink, batchSize: number): Promise<void> {
    const ledgerAccountId = this.account.ledgerAccountId;
    const opening = (await this.ledger.cumulative(ledgerAccountId, { before: interval.from })).netMinor;
    let entries = await this.ledger.entries(ledgerAccountId, interval, undefined, batchSize);
    await sink.start({ account: this.account, interval, openingBalanceMinor: opening });
    let running = opening;
    let credits = 0n;
    let debits = 0n;
    let count = 0;
    while (entries.length > 0) {
      if (sink.aborted()) return;
      const lines = await this.toLines(entries, running);
      for (const line of lines) {
        if (line.amountMinor > 0n) credits += line.amountMinor;
        else debits += line.amountMinor;
      }
      count += lines.length;
      const last = lines[lines.length - 1] as StatementLine;
      running = last.runningBalanceMinor;
      await sink.lines(lines);
      if (entries.length < batchSize) break;
      entries = await this.ledger.entries(ledgerAccountId, interval, { bookedAt: last.bookedAt, entryId: last.entryId }, batchSize);
    }
    if (sink.aborted()) return;
    await sink.end({ closingBalanceMinor: running, totalCreditsMinor: credits, totalDebitsMinor: debits, entryCount: count });
  }

  /** The cursor entry's position; 400 unless it is an entry of this account inside the interval. */
  private async positionWithin(interval: StatementInterval, entryId: string): Promise<EntryPosition> {
    const position = await this.ledger.entryPosition(this.account.ledgerAccountId, entryId);
    const at = position ? new Date(position.bookedAt).getTime() : NaN;
    if (!position || at < interval.from.getTime() || at >= interval.to.getTime()) throw ValidationError.field('query.starting_after', INVALID_CURSOR);
    return position;
  }

  private async toLines(entries: AccountEntry[], openingMinor: bigint): Promise<StatementLine[]> {
    const counterparties = entries.flatMap((entry) => (entry.counterparty ? [entry.counterparty] : []));
    const organizationIds = counterparties.flatMap((c) => (c.ownerType === 'organization' && c.ownerId !== null ? [c.ownerId] : []));
    const organizations = await new OrganizationRepository(this.db).findProfiles(organizationIds);
    const labels = await new AccountRepository(this.db).labelsByLedgerAccount(counterparties.map((c) => c.ledgerAccountId));
    let running = openingMinor;
    return entries.map((entry) => {
      running += entry.amountMinor;
      const other = entry.counterparty;
      const names = {
        organizationName: other?.ownerType === 'organization' && other.ownerId !== null ? (organizations.get(other.ownerId)?.name ?? null) : null,
        accountLabel: other ? (labels.get(other.ledgerAccountId) ?? null) : null,
      };
      return {
        entryId: entry.entryId,
        postingId: entry.postingId,
        postingKind: entry.postingKind,
        bookedAt: entry.bookedAt,
        description: describePosting(entry),
        counterparty: describeCounterparty(entry, names, this.account.organizationId),
        amountMinor: entry.amountMinor,
        runningBalanceMinor: running,
      };
    });
  }
}
