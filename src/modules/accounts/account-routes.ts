import { Router, type Request, type Response } from 'express';
import type { operations } from '../../../generated/openapi';
import { ValidationError } from '../../errors';
import { sendData } from '../../http/envelope';
import { formatMinor } from '../ledger';
import { csvBalanceRow, csvHeader, csvLine, presentAccount, presentLine, statementFilename } from './account-presenter';
import type { AccountService, StatementSink } from './account-service';

type ListAccountsData = operations['listAccounts']['responses']['200']['content']['application/json']['data'];
type StatementQuery = NonNullable<operations['getAccountStatement']['parameters']['query']>;
type StatementData = operations['getAccountStatement']['responses']['200']['content']['application/json']['data'];

function organizationOf(req: Request) {
  // The organisation access middleware (mounted before every Business router) sets it.
  if (!req.organization) throw new Error('organisation access middleware did not run');
  return req.organization;
}

/** CSV when `format=csv`, or when `format` is absent and the Accept header prefers text/csv. */
function wantsCsv(req: Request, format: StatementQuery['format']): boolean {
  if (format) return format === 'csv';
  return req.accepts(['application/json', 'text/csv']) === 'text/csv';
}

/**
 * Writes and, when the socket buffer is full, waits for it to drain or close (back pressure).
 * A client that reads nothing for `stallTimeoutMs` is cut: the response is destroyed, so the
 * stream stops (the sink reports aborted) and its database transaction ends.
 */
export function write(res: Response, chunk: string, stallTimeoutMs: number): Promise<void> {
  if (res.destroyed || res.write(chunk)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(() => {
      res.req?.log?.warn({ stallTimeoutMs }, 'statement stream cut: the client stopped reading');
      res.destroy();
      done();
    }, stallTimeoutMs);
    res.on('drain', done);
    res.on('close', done);
  });
}

function csvSink(res: Response, stallTimeoutMs: number): StatementSink {
  let exponent = 0;
  let currency = '';
  let to = new Date(0);
  return {
    async start({ account, interval, openingBalanceMinor }) {
      exponent = account.exponent;
      currency = account.currency;
      to = interval.to;
      res.status(200);
      res.setHeader('Content-Type', 'text/csv; charset=utf-8');
      res.setHeader('Content-Disposition', `attachment; filename="${statementFilename(account.id, interval.from, interval.to)}"`);
      res.setHeader('Cache-Control', 'no-store');
      await write(res, csvHeader() + csvBalanceRow('opening_balance', interval.from, openingBalanceMinor, exponent, currency), stallTimeoutMs);
    },
    async lines(lines) {
      let chunk = '';
      for (const line of lines) chunk += csvLine(line, exponent, currency);
      await write(res, chunk, stallTimeoutMs);
    },
    async end({ closingBalanceMinor }) {
      await write(res, csvBalanceRow('closing_balance', to, closingBalanceMinor, exponent, currency), stallTimeoutMs);
      res.end();
    },
    aborted: () => res.destroyed || res.writableEnded,
  };
}

/** GET .../accounts and GET .../accounts/{accountId}/statement (behind the organisation access policy). */
export function accountRoutes(accounts: AccountService): Router {
  const router = Router();

  router.get('/business/organizations/:orgId/accounts', async (req, res) => {
    const organization = organizationOf(req);
    const list = await accounts.listAccounts(organization.id);
    const data: ListAccountsData = { object: 'list', data: list.map(presentAccount), has_more: false, next_cursor: null };
    sendData(res, 200, data);
  });

  router.get('/business/organizations/:orgId/accounts/:accountId/statement', async (req, res) => {
    const organization = organizationOf(req);
    const accountId = String(req.params.accountId);
    const query = req.query as StatementQuery;
    // The representation depends on Accept when `format` is absent.
    res.vary('Accept');
    if (wantsCsv(req, query.format)) {
      if (query.limit !== undefined || query.starting_after !== undefined) {
        throw new ValidationError('limit and starting_after page JSON statements; a CSV statement always holds the whole interval.', [
          { field: query.limit !== undefined ? 'query.limit' : 'query.starting_after', message: 'not allowed with the CSV format' },
        ]);
      }
      try {
        await accounts.streams.run(req.auth?.userId ?? organization.id, () =>
          accounts.streamStatement(organization.id, accountId, { from: query.from, to: query.to }, csvSink(res, accounts.streamStallTimeoutMs)),
        );
      } catch (error) {
        if (!res.headersSent) throw error;
        // The CSV has started: no error envelope can follow. Cut the connection so the client
        // sees a truncated file (no closing_balance row), never a complete-looking one.
        req.log?.error({ err: error }, 'statement stream failed after the response started');
        res.destroy();
      }
      return;
    }
    const page = await accounts.statementPage(organization.id, accountId, {
      from: query.from,
      to: query.to,
      limit: query.limit,
      startingAfter: query.starting_after,
    });
    const { exponent } = page.account;
    const data: StatementData = {
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
    };
    res.setHeader('Cache-Control', 'no-store');
    sendData(res, 200, data);
  });

  return router;
}
