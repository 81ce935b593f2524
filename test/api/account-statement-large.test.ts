import http from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { databaseKind, testKnex } from '../support/database';
import { accessTokenFor, bearer, createMember, createOrgAccount, createOrganization } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { bulkCredit } from '../support/org-account-postings';
import { statementUrl } from '../support/statements';

/**
 * A statement of 200,000 entries streamed as CSV through a real socket, with the heap of this
 * process (server and client together) sampled while it streams. The client only counts and
 * checks rows, keeping nothing, so any growth is the server's. On the embedded back-end the
 * volume is smaller (STATEMENT_LARGE_ENTRIES overrides both): PGlite inserts and reads far
 * slower than PostgreSQL.
 */
const ENTRIES = Number(process.env.STATEMENT_LARGE_ENTRIES ?? (databaseKind() === 'embedded' ? 25_000 : 200_000));
const HEAP_GROWTH_LIMIT = 64 * 1024 * 1024;
const STEP_MS = 100;

// A callable gc() to measure the live heap (what is retained), not garbage awaiting collection.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

let app: App;
let server: http.Server;
let baseUrl: string;

beforeAll(async () => {
  app = await buildTestApp();
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

interface StreamResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  rows: number;
  lastRow: string;
  checkedRunningBalance: bigint;
  bytes: number;
  peakHeapGrowth: number;
  elapsedMs: number;
}

/** Streams the response, checking each entry row's running balance, keeping only counters. */
function streamCsv(path: string, token: string): Promise<StreamResult> {
  return new Promise((resolve, reject) => {
    gc();
    const baseline = process.memoryUsage().heapUsed;
    let peak = baseline;
    // Live heap after a full collection, sampled while the statement streams.
    const sampler = setInterval(() => {
      gc();
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }, 100);
    const started = Date.now();
    const req = http.get(`${baseUrl}${path}`, { headers: bearer(token) }, (res) => {
      let rows = 0;
      let bytes = 0;
      let carry = '';
      let lastRow = '';
      let running = 0n;
      let index = 0;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        bytes += chunk.length;
        const parts = (carry + chunk).split('\r\n');
        carry = parts.pop() ?? '';
        for (const row of parts) {
          rows += 1;
          lastRow = row;
          // Every cell is quoted; these rows hold no comma inside a cell.
          const cells = row.split(',').map((cell) => cell.slice(1, -1));
          if (cells[0] === 'opening_balance') running = BigInt(cells[8] as string);
          if (cells[0] === 'entry') {
            running += BigInt(cells[7] as string);
            if (BigInt(cells[8] as string) !== running) reject(new Error(`running balance breaks at row ${index}: ${row}`));
          }
          index += 1;
        }
      });
      res.on('end', () => {
        clearInterval(sampler);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, rows, lastRow, checkedRunningBalance: running, bytes, peakHeapGrowth: peak - baseline, elapsedMs: Date.now() - started });
      });
      res.on('error', reject);
    });
    req.on('error', (error) => {
      clearInterval(sampler);
      reject(error);
    });
  });
}

describe(`a statement of ${ENTRIES} entries`, () => {
  it('streams as CSV with bounded memory, and its JSON first page agrees', { timeout: 600_000 }, async () => {
    const org = await createOrganization();
    const token = await accessTokenFor(app, await createMember(org, 'finance_manager'));
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const start = new Date('2026-01-01T00:00:00Z');
    const to = new Date(start.getTime() + ENTRIES * STEP_MS);
    const insertStarted = Date.now();
    await bulkCredit(account, ENTRIES, { start, stepMs: STEP_MS, amountMinor: 3n });
    const insertMs = Date.now() - insertStarted;

    const result = await streamCsv(statementUrl(org.id, account.id, { from: start, to, format: 'csv' }), token);
    console.log(
      JSON.stringify({
        backend: databaseKind(),
        entries: ENTRIES,
        insert_ms: insertMs,
        stream_ms: result.elapsedMs,
        rows_per_second: Math.round((ENTRIES / result.elapsedMs) * 1000),
        bytes: result.bytes,
        peak_live_heap_growth_mb: Math.round((result.peakHeapGrowth / 1024 / 1024) * 10) / 10,
      }),
    );
    expect(result.status).toBe(200);
    expect(result.headers['content-type']).toMatch(/^text\/csv/);
    expect(result.rows).toBe(ENTRIES + 3); // header, opening, entries, closing
    expect(result.lastRow).toBe(`"closing_balance","","","","${to.toISOString()}","Closing balance","","","${3 * ENTRIES}","XOF"`);
    expect(result.checkedRunningBalance).toBe(3n * BigInt(ENTRIES));
    expect(result.peakHeapGrowth).toBeLessThan(HEAP_GROWTH_LIMIT);

    const page = await request(app).get(statementUrl(org.id, account.id, { from: start, to, limit: 1000 })).set(bearer(token));
    expect(page.status).toBe(200);
    expect(page.body.data).toMatchObject({ opening_balance: '0', closing_balance: String(3 * ENTRIES), entry_count: ENTRIES, has_more: true });
    expect(page.body.data.lines).toHaveLength(1000);
    await expectLedgerInvariants(testKnex());
  });

  it('stops reading and releases its database connection when the client goes away mid-stream', { timeout: 120_000 }, async () => {
    const org = await createOrganization();
    const token = await accessTokenFor(app, await createMember(org, 'owner'));
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const start = new Date('2025-06-01T00:00:00Z');
    await bulkCredit(account, 5000, { start, stepMs: 1000, amountMinor: 1n });
    const path = statementUrl(org.id, account.id, { from: start, to: new Date(start.getTime() + 5000 * 1000), format: 'csv' });
    const received = await new Promise<number>((resolve, reject) => {
      const req = http.get(`${baseUrl}${path}`, { headers: bearer(token) }, (res) => {
        res.once('data', (chunk: Buffer) => {
          req.destroy();
          resolve(chunk.length);
        });
      });
      req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error)));
    });
    expect(received).toBeGreaterThan(0);
    // The statement's transaction ended: the next requests get the database at once (on the
    // embedded back-end there is a single connection, so a leaked one would hang them).
    const started = Date.now();
    for (let i = 0; i < 3; i += 1) {
      const res = await request(app).get(statementUrl(org.id, account.id, { from: start, to: new Date(start.getTime() + 10_000), limit: 5 })).set(bearer(token));
      expect(res.status).toBe(200);
      expect(res.body.data.lines).toHaveLength(5);
    }
    expect(Date.now() - started).toBeLessThan(10_000);
    if (databaseKind() === 'postgres') {
      const rows = await testKnex().raw(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'`);
      expect(rows.rows[0].n).toBe(0);
    }
  });
});
