import { ValidationError } from '../../errors';
import type { ChunkWriter, Handlers } from '../../contract';
import { formatMinor } from '../ledger';
import { csvBalanceRow, csvHeader, csvLine, presentAccount, presentLine, statementFilename } from './account-presenter';
import type { AccountService, StatementSink } from './account-service';

/** The CSV statement, written through the mount's chunk writer (headers go out with the first row). */
function csvSink(out: ChunkWriter): StatementSink {
  let exponent = 0;
  let currency = '';
  let to = new Date(0);
  return {
    async start({ account, interval, openingBalanceMinor }) {
      exponent = account.exponent;
      currency = account.currency;
      to = interval.to;
      out.start({
        'Content-Type': 'text/csv; charset=utf-8',
        'Content-Disposition': `attachment; filename="${statementFilename(account.id, interval.from, interval.to)}"`,
        'Cache-Control': 'no-store',
      });
      await out.write(csvHeader() + csvBalanceRow('opening_balance', interval.from, openingBalanceMinor, exponent, currency));
    },
    async lines(lines) {
      let chunk = '';
      for (const line of lines) chunk += csvLine(line, exponent, currency);
      await out.write(chunk);
    },
    async end({ closingBalanceMinor }) {
      await out.write(csvBalanceRow('closing_balance', to, closingBalanceMinor, exponent, currency));
      out.end();
    },
    aborted: () => out.aborted(),
  };
}

/** GET .../accounts and GET .../accounts/{accountId}/statement (JSON page or CSV file). */
export function accountHandlers(accounts: AccountService): Handlers<'listAccounts' | 'getAccountStatement'> {
  return {
    async listAccounts({ organization }) {
      const list = await accounts.listAccounts(organization.id);
      return { data: { object: 'list', data: list.map(presentAccount), has_more: false, next_cursor: null } };
    },
    async getAccountStatement({ caller, organization, path, query, accepts }) {
      // CSV when `format=csv`, or when `format` is absent and the Accept header prefers text/csv.
      const csv = query.format ? query.format === 'csv' : accepts(['application/json', 'text/csv']) === 'text/csv';
      // The representation depends on Accept when `format` is absent.
      const vary = { Vary: 'Accept' };
      if (csv) {
        if (query.limit !== undefined || query.starting_after !== undefined) {
          throw new ValidationError('limit and starting_after page JSON statements; a CSV statement always holds the whole interval.', [
            { field: query.limit !== undefined ? 'query.limit' : 'query.starting_after', message: 'not allowed with the CSV format' },
          ]);
        }
        return {
          headers: vary,
          // A bounded number of downloads per caller and in total (429/503 beyond): slow readers
          // can never hold the whole pool.
          stream: (out) =>
            accounts.streams.run(caller.userId, () => accounts.streamStatement(organization.id, path.accountId, { from: query.from, to: query.to }, csvSink(out))),
        };
      }
      const page = await accounts.statementPage(organization.id, path.accountId, {
        from: query.from,
        to: query.to,
        limit: query.limit,
        startingAfter: query.starting_after,
      });
      const { exponent } = page.account;
      return {
        headers: { ...vary, 'Cache-Control': 'no-store' },
        data: {
          object: 'account_statement',
          account_id: page.account.id,
          currency_code: page.account.currency,
          from: page.interval.from.toISOString(),
          to: page.interval.to.toISOString(),
          opening_balance: formatMinor(page.openingBalanceMinor, exponent),
          closing_balance: formatMinor(page.closingBalanceMinor, exponent),
          total_credits: formatMinor(page.totalCreditsMinor, exponent),
          total_debits: formatMinor(page.totalDebitsMinor, exponent),
          entry_count: page.entryCount,
          lines: page.lines.map((line) => presentLine(line, exponent)),
          has_more: page.hasMore,
          next_cursor: page.nextCursor,
        },
      };
    },
  };
}
