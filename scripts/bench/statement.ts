/**
 * The CSV statement of an account with 200,000 ledger entries: rows per second and the peak
 * RSS of the API process while it streams, over a real socket.
 *
 * Needs PostgreSQL: DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres. A scratch
 * database is created and dropped at the end. The entries are booked as 200,000 balanced
 * two-entry postings (the account credited, the external clearing account debited), one
 * second apart, with set-based SQL in chunks (the ledger triggers still check and apply every
 * entry), then VACUUM ANALYZE as autovacuum would. The API runs in a child process pinned to
 * core 0 with production settings; this script reads the CSV, checks every running balance
 * and the closing row, and keeps nothing. BENCH_STATEMENT_ENTRIES and BENCH_STATEMENT_RUNS
 * override the defaults; BENCH_STATEMENT_MAX_OLD_SPACE_MB runs the server with a capped heap.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { Knex } from 'knex';
import { AccountService } from '../../src/modules/accounts';
import { externalClearingAccount } from '../../src/modules/ledger';
import { printResult, startServerProcess, BENCH_JWT_SECRET, createBenchMember, createScratchDatabase } from './bench-support';

const ENTRIES = Number(process.env.BENCH_STATEMENT_ENTRIES ?? 200_000);
const RUNS = Number(process.env.BENCH_STATEMENT_RUNS ?? 3);
/** Postings per transaction (each chunk rewrites the two balance rows once). */
const CHUNK = 200;

async function fill(knex: Knex, ledgerAccountId: string, start: Date): Promise<void> {
  const clearing = await externalClearingAccount(knex, 'XOF');
  const batch = crypto.randomUUID();
  for (let offset = 0; offset < ENTRIES; offset += CHUNK) {
    const last = Math.min(offset + CHUNK, ENTRIES) - 1;
    await knex.transaction(async (trx) => {
      await trx.raw(
        `CREATE TEMP TABLE bench_postings ON COMMIT DROP AS
           SELECT gen_random_uuid() AS id, ?::timestamptz + g * interval '1 second' AS at, g
             FROM generate_series(?::int, ?::int) AS g`,
        [start.toISOString(), offset, last],
      );
      // Historical rows for volume: written directly (ledger_post books at now()), which only
      // a transaction that raises ledger_post's flag may do; balances move here instead.
      await trx.raw("SELECT set_config('ledger.posting', 'on', true)");
      await trx.raw(
        `INSERT INTO postings (id, kind, reference, metadata, created_at)
           SELECT id, 'bench.payment_received', ? || ':' || g,
                  jsonb_build_object('reference', 'ORDER-' || g, 'counterparty', 'Mobile money customer'), at
             FROM bench_postings`,
        [batch],
      );
      await trx.raw(
        `INSERT INTO entries (posting_id, account_id, currency, amount_minor, created_at)
           SELECT id, ?::uuid, 'XOF', 1000 + g % 997, at FROM bench_postings
           UNION ALL
           SELECT id, ?::uuid, 'XOF', -(1000 + g % 997), at FROM bench_postings`,
        [ledgerAccountId, clearing.id],
      );
      await trx.raw(
        `UPDATE ledger_accounts SET balance_minor = balance_minor + CASE WHEN id = ?::uuid THEN 1 ELSE -1 END * (SELECT sum(1000 + g % 997) FROM bench_postings), updated_at = now()
          WHERE id IN (?::uuid, ?::uuid)`,
        [ledgerAccountId, ledgerAccountId, clearing.id],
      );
    });
    if ((offset / CHUNK) % 50 === 49) await knex.raw('VACUUM ledger_accounts');
  }
  await knex.raw('VACUUM ANALYZE ledger_accounts, postings, entries');
}

interface Run {
  rows: number;
  bytes: number;
  elapsed_ms: number;
  rows_per_s: number;
  time_to_first_byte_ms: number;
}

function streamCsv(url: string, token: string, expectedClosing: bigint): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    let firstByte = 0;
    http
      .get(url, { headers: { authorization: `Bearer ${token}` } }, (res) => {
        if (res.statusCode !== 200) {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => reject(new Error(`status ${res.statusCode}: ${body.slice(0, 500)}`)));
          return;
        }
        let rows = 0;
        let bytes = 0;
        let carry = '';
        let running = 0n;
        let lastRow = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (!firstByte) firstByte = Number(process.hrtime.bigint() - started) / 1e6;
          bytes += chunk.length;
          const parts = (carry + chunk).split('\r\n');
          carry = parts.pop() ?? '';
          for (const row of parts) {
            rows += 1;
            lastRow = row;
            // Every cell is quoted (CSV injection defence); the bench's own cells hold no quote or comma.
            const cells = row.slice(1, -1).split('","');
            if (cells[0] === 'entry') {
              running += BigInt(cells[7] as string);
              if (BigInt(cells[8] as string) !== running) return reject(new Error(`running balance breaks: ${row}`));
            }
          }
        });
        res.on('end', () => {
          const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
          if (!lastRow.startsWith('"closing_balance",') || !lastRow.endsWith(`,"${expectedClosing}","XOF"`)) return reject(new Error(`bad closing row ${lastRow}`));
          const entries = rows - 3;
          resolve({ rows: entries, bytes, elapsed_ms: Math.round(elapsed), rows_per_s: Math.round((entries / elapsed) * 1000), time_to_first_byte_ms: Math.round(firstByte) });
        });
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

async function main(): Promise<void> {
  const scratch = await createScratchDatabase('bench_statement');
  const { knex, url } = scratch;
  let server: Awaited<ReturnType<typeof startServerProcess>> | undefined;
  try {
    const { orgId, token } = await createBenchMember(knex, 'accounts');
    // Only opens the account (the server signs the cursors with its own secret).
    const account = await knex.transaction((trx) => new AccountService(knex, { cursorSecret: crypto.randomBytes(32).toString('hex') }).createAccount(trx, { organizationId: orgId, currency: 'XOF', label: 'Bench XOF' }));

    const start = new Date('2026-01-01T00:00:00Z');
    const fillStarted = Date.now();
    await fill(knex, account.ledgerAccountId, start);
    const fillMs = Date.now() - fillStarted;
    const closing = BigInt(((await knex('ledger_accounts').where({ id: account.ledgerAccountId }).first('balance_minor')) as { balance_minor: string }).balance_minor);


    // BENCH_STATEMENT_MAX_OLD_SPACE_MB caps the server's V8 heap: a statement that held its rows
    // would crash it (out of memory); a streamed one does not notice.
    const heapCap = process.env.BENCH_STATEMENT_MAX_OLD_SPACE_MB;
    server = await startServerProcess('scripts/bench/servers/api-server.ts', {
      DATABASE_URL: url,
      JWT_SECRET: BENCH_JWT_SECRET,
      REDIS_URL: '',
      ...(heapCap ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=${Number(heapCap)}`.trim() } : {}),
    });
    const rssBeforeMb = await server.peakRssMb();
    const to = new Date(start.getTime() + ENTRIES * 1000);
    const statementUrl = `${server.url}/api/business/organizations/${orgId}/accounts/${account.id}/statement?from=${start.toISOString()}&to=${to.toISOString()}&format=csv`;
    const runs: Run[] = [];
    for (let i = 0; i < RUNS; i += 1) runs.push(await streamCsv(statementUrl, token, closing));
    const best = runs.reduce((a, b) => (b.rows_per_s > a.rows_per_s ? b : a));
    printResult('statement', {
      entries: ENTRIES,
      server_max_old_space_mb: heapCap ? Number(heapCap) : null,
      fill_ms: fillMs,
      runs,
      rows_per_s: best.rows_per_s,
      rows_per_s_median: runs.map((r) => r.rows_per_s).sort((a, b) => a - b)[Math.floor(runs.length / 2)],
      csv_mb: Math.round((best.bytes / 1024 / 1024) * 10) / 10,
      server_peak_rss_mb_before: rssBeforeMb,
      server_peak_rss_mb: await server.peakRssMb(),
    });
  } finally {
    await server?.stop();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
