import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AccountService, type StatementSink } from '../../src/modules/accounts';
import type { StatementLine } from '../../src/modules/accounts';
import { testConfig } from '../support/app';
import { testKnex } from '../support/database';
import { createOrgAccount, createOrganization } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { moveMoney } from '../support/org-account-postings';

/** Collects a streamed statement (tests only: real callers never hold it all). */
function collectingSink() {
  const result = { opening: undefined as bigint | undefined, closing: undefined as bigint | undefined, count: -1, credits: 0n, debits: 0n, lines: [] as StatementLine[] };
  const sink: StatementSink = {
    async start(header) {
      result.opening = header.openingBalanceMinor;
    },
    async lines(lines) {
      result.lines.push(...lines);
    },
    async end(summary) {
      result.closing = summary.closingBalanceMinor;
      result.count = summary.entryCount;
      result.credits = summary.totalCreditsMinor;
      result.debits = summary.totalDebitsMinor;
    },
    aborted: () => false,
  };
  return { sink, result };
}

async function sumBefore(ledgerAccountId: string, before: Date): Promise<bigint> {
  const row = await testKnex()('entries').where('account_id', ledgerAccountId).andWhere('created_at', '<', before).first(testKnex().raw('coalesce(sum(amount_minor), 0) AS total'));
  return BigInt((row as { total: string }).total);
}

async function idsWithin(ledgerAccountId: string, from: Date, to: Date): Promise<string[]> {
  const rows = await testKnex()('entries').where('account_id', ledgerAccountId).andWhere('created_at', '>=', from).andWhere('created_at', '<', to).orderBy(['created_at', 'id']).select('id');
  return rows.map((row: { id: string | number }) => String(row.id));
}

describe('statement reconciliation (property)', () => {
  it('opening + entries = closing for random postings and random intervals, in the stream and in JSON pages alike', async () => {
    // Read a minute later: the postings of the run are past the settle margin.
    const service = new AccountService(testKnex(), { cursorSecret: testConfig().paySecret, clock: () => new Date(Date.now() + 60_000) });
    const org = await createOrganization();
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.bigInt({ min: -50_000n, max: 100_000n }).filter((n) => n !== 0n), { minLength: 1, maxLength: 10 }),
        fc.array(fc.tuple(fc.double({ min: -0.2, max: 1.2, noNaN: true }), fc.double({ min: -0.2, max: 1.2, noNaN: true })), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 3 }),
        async (amounts, intervals, pageSize, batchSize) => {
          const account = await createOrgAccount(org, { currency: 'XOF' });
          // Post through the LedgerService, one transaction each; never overdraw (the ledger refuses).
          let balance = 0n;
          const posted: bigint[] = [];
          const startedAt = Date.now();
          for (const requested of amounts) {
            const amount = balance + requested < 0n ? -requested : requested;
            await moveMoney(account, amount, { reference: `R${balance}` });
            balance += amount;
            posted.push(amount);
          }
          const endedAt = Date.now() + 1;
          const span = Math.max(endedAt - startedAt, 1);

          // The whole history: closing is the ledger balance.
          const all = collectingSink();
          await service.streamStatement(org.id, account.id, { from: new Date(startedAt - 60_000), to: new Date(endedAt + 60_000) }, all.sink);
          expect(all.result.opening).toBe(0n);
          expect(all.result.closing).toBe(balance);
          expect(all.result.lines.map((l) => l.amountMinor)).toEqual(posted);

          for (const [a, b] of intervals) {
            let from = new Date(startedAt + Math.round(Math.min(a, b) * span));
            let to = new Date(startedAt + Math.round(Math.max(a, b) * span));
            if (to.getTime() <= from.getTime()) to = new Date(from.getTime() + 1);
            if (from.getTime() > to.getTime()) [from, to] = [to, from];

            const { sink, result } = collectingSink();
            await service.streamStatement(org.id, account.id, { from, to }, sink, batchSize);
            const opening = await sumBefore(account.ledgerAccountId, from);
            const closing = await sumBefore(account.ledgerAccountId, to);
            // The statement's balances are the ledger's, computed independently here.
            expect(result.opening).toBe(opening);
            expect(result.closing).toBe(closing);
            // Opening + every line = closing; each running balance follows from the previous.
            let running = opening;
            for (const line of result.lines) {
              running += line.amountMinor;
              expect(line.runningBalanceMinor).toBe(running);
            }
            expect(running).toBe(closing);
            expect(result.count).toBe(result.lines.length);
            expect(result.credits + result.debits).toBe(closing - opening);
            // Exactly the entries of [from, to), in order.
            expect(result.lines.map((l) => l.entryId)).toEqual(await idsWithin(account.ledgerAccountId, from, to));

            // JSON pages, walked with the cursor, say the same.
            const paged: StatementLine[] = [];
            let cursor: string | undefined;
            for (;;) {
              const page = await service.statementPage(org.id, account.id, { from, to, limit: pageSize, startingAfter: cursor });
              expect(page.openingBalanceMinor).toBe(opening);
              expect(page.closingBalanceMinor).toBe(closing);
              expect(page.entryCount).toBe(result.lines.length);
              paged.push(...page.lines);
              if (!page.hasMore) break;
              cursor = page.nextCursor ?? undefined;
            }
            expect(paged).toEqual(result.lines);
          }
        },
      ),
      { numRuns: 20 },
    );
    await expectLedgerInvariants(testKnex());
  });
});
