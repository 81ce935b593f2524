import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, testConfig, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createMember, createOrgAccount, createOrganization, type TestOrganization } from '../support/factories';
import { until } from '../support/jobs';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { moveMoney } from '../support/org-account-postings';
import { parseCsv, statementUrl } from '../support/statements';
import { encodeStatementCursor } from '../../src/modules/accounts';

let app: App;
/** The secret the app signs statement cursors with: lets the tests forge genuine-looking ones. */
const cursorSecret = testConfig().paySecret;
let org: TestOrganization;
let token: string;

/**
 * The app reads statements a minute after now: the entries these tests post a moment ago are
 * past the 15-second settle margin (tested on its own below).
 */
const settledClock = () => new Date(Date.now() + 60_000);

beforeAll(async () => {
  app = await buildTestApp({ now: settledClock });
  org = await createOrganization();
  token = await accessTokenFor(app, await createMember(org, 'finance_manager'));
});

const listUrl = (orgId: string) => `/api/business/organizations/${orgId}/accounts`;

describe('GET /business/organizations/{orgId}/accounts', () => {
  it('lists the organisation accounts with masked numbers and ledger balances, never another organisation\'s', async () => {
    const own = await createOrganization();
    const ownToken = await accessTokenFor(app, await createMember(own, 'director'));
    const xof = await createOrgAccount(own, { currency: 'XOF', accountNumber: 'CI0081234567890', label: 'Main XOF' });
    const eur = await createOrgAccount(own, { currency: 'EUR', accountNumber: null, iban: 'FR76 3000 6000 0112 3456 7890 189', label: 'EUR' });
    const closed = await createOrgAccount(own, { currency: 'USD', status: 'inactive', accountNumber: '1234', holderType: 'individual' });
    await moveMoney(xof, 1_500_000n);
    await moveMoney(xof, -250_000n);
    await moveMoney(eur, 1_250_050n);
    await moveMoney(closed, 999n);
    const foreign = await createOrgAccount(await createOrganization(), { currency: 'XOF' });

    const res = await request(app).get(listUrl(own.id)).set(bearer(ownToken));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({ object: 'list', has_more: false, next_cursor: null });
    const byId = new Map<string, Record<string, unknown>>(res.body.data.data.map((a: { id: string }) => [a.id, a]));
    expect([...byId.keys()].sort()).toEqual([xof.id, eur.id, closed.id].sort());
    expect(byId.has(foreign.id)).toBe(false);
    expect(byId.get(xof.id)).toEqual({
      id: xof.id,
      currency_code: 'XOF',
      status: 'active',
      holder_type: 'business',
      label: 'Main XOF',
      bank_name: 'Test Bank',
      account_number_masked: '***********7890',
      iban_masked: null,
      balance: '1250000',
      available_balance: '1250000',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(byId.get(eur.id)).toMatchObject({ iban_masked: 'FR76 **** **** **** **** ***0 189', account_number_masked: null, balance: '12500.50', available_balance: '12500.50' });
    expect(byId.get(closed.id)).toMatchObject({
      status: 'inactive',
      holder_type: 'individual',
      account_number_masked: '****',
      balance: '9.99',
      available_balance: '0.00',
    });
    // The full numbers never leave the service.
    expect(res.text).not.toContain('1234567890');
    expect(res.text).not.toContain('FR7630006000011234567890189');
    // Newest first.
    expect(res.body.data.data.map((a: { id: string }) => a.id)).toEqual([closed.id, eur.id, xof.id]);
    await expectLedgerInvariants(testKnex());
  });

  it('answers an empty list for an organisation without accounts', async () => {
    const empty = await createOrganization();
    const res = await request(app).get(listUrl(empty.id)).set(bearer(await accessTokenFor(app, await createMember(empty, 'owner'))));
    expect(res.status).toBe(200);
    expect(res.body.data.data).toEqual([]);
  });

  it('refuses cashiers (403), strangers (404) and anonymous callers (401)', async () => {
    const cashier = await accessTokenFor(app, await createMember(org, 'cashier'));
    expect((await request(app).get(listUrl(org.id)).set(bearer(cashier))).body.error).toBe('InsufficientRole');
    const stranger = await accessTokenFor(app, await createMember(await createOrganization(), 'owner'));
    expect((await request(app).get(listUrl(org.id)).set(bearer(stranger))).status).toBe(404);
    expect((await request(app).get(listUrl(org.id))).status).toBe(401);
  });
});

describe('rate limiting', () => {
  it('answers 429 RateLimitExceeded with Retry-After on the account list and the statement (JSON and CSV) once the caller exceeds the limit', async () => {
    const limited = await buildTestApp({ env: { RATE_LIMIT_AUTHENTICATED: '2' } });
    const own = await createOrganization();
    const ownToken = await accessTokenFor(limited, await createMember(own, 'owner'));
    const account = await createOrgAccount(own, { currency: 'XOF' });
    expect((await request(limited).get(listUrl(own.id)).set(bearer(ownToken))).status).toBe(200);
    expect((await request(limited).get(statementUrl(own.id, account.id, {})).set(bearer(ownToken))).status).toBe(200);
    for (const path of [listUrl(own.id), statementUrl(own.id, account.id, {}), statementUrl(own.id, account.id, { format: 'csv' })]) {
      const res = await request(limited).get(path).set(bearer(ownToken));
      expect(res.status, path).toBe(429);
      expect(res.body).toMatchObject({ success: false, error: 'RateLimitExceeded' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
  });
});

describe('GET /business/organizations/{orgId}/accounts/{accountId}/statement', () => {
  it('answers opening balance, lines with running balance, closing balance; opening + lines = closing', async () => {
    const account = await createOrgAccount(org, { currency: 'EUR' });
    await moveMoney(account, 100_00n, { reference: 'ORDER-1' });
    const from = new Date();
    // The window's bounds are instants of the real clock: an entry on either side of one is booked once the clock has passed it.
    await until(() => Date.now() > from.getTime());
    await moveMoney(account, 250_00n, { reference: 'ORDER-2', counterparty: 'Card customer' });
    await moveMoney(account, -15_00n, { description: 'Bank fee' });
    const lastBookedBy = Date.now();
    await until(() => Date.now() > lastBookedBy);
    const to = new Date();
    await moveMoney(account, 1n);

    const res = await request(app).get(statementUrl(org.id, account.id, { from, to })).set(bearer(token));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const data = res.body.data;
    expect(data).toMatchObject({
      object: 'account_statement',
      account_id: account.id,
      currency_code: 'EUR',
      from: from.toISOString(),
      to: to.toISOString(),
      opening_balance: '100.00',
      closing_balance: '335.00',
      total_credits: '250.00',
      total_debits: '-15.00',
      entry_count: 2,
      has_more: false,
      next_cursor: null,
    });
    expect(data.lines).toEqual([
      expect.objectContaining({ posting_kind: 'test.payment_received', description: 'Test payment received - ORDER-2', counterparty: 'Card customer', amount: '250.00', running_balance: '350.00' }),
      expect.objectContaining({ posting_kind: 'test.payout', description: 'Bank fee', counterparty: 'External payment network', amount: '-15.00', running_balance: '335.00' }),
    ]);
    expect(data.lines[0].entry_id).toMatch(/^[1-9]\d*$/);
  });

  it('pages JSON with limit and starting_after; running balances continue across pages', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const from = new Date(Date.now() - 1000);
    for (const amount of [5n, 7n, -3n, 11n, 13n]) await moveMoney(account, amount);
    const to = new Date(Date.now() + 1000);
    const full = (await request(app).get(statementUrl(org.id, account.id, { from, to })).set(bearer(token))).body.data;
    expect(full.lines).toHaveLength(5);
    const lines: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page += 1) {
      const res = await request(app).get(statementUrl(org.id, account.id, { from, to, limit: 2, starting_after: cursor })).set(bearer(token));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toMatchObject({ opening_balance: '0', closing_balance: '33', entry_count: 5 });
      lines.push(...res.body.data.lines);
      if (!res.body.data.has_more) break;
      cursor = res.body.data.next_cursor;
    }
    expect(lines).toEqual(full.lines);
    expect(full.lines.map((l: { running_balance: string }) => l.running_balance)).toEqual(['5', '12', '9', '20', '33']);

    const other = await createOrgAccount(org, { currency: 'XOF' });
    const foreignCursor = (await moveMoney(other, 1n)) && (await request(app).get(statementUrl(org.id, other.id, {})).set(bearer(token))).body.data.lines[0].entry_id;
    const bad = await request(app).get(statementUrl(org.id, account.id, { from, to, starting_after: foreignCursor })).set(bearer(token));
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: 'ValidationError', details: [{ field: 'query.starting_after' }] });
  });

  it('a cursor naming an entry beyond the bigint range, a raw entry id or a truncated token is a 400 ValidationError, not a database error', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const { entry_id: entryId } = ((await moveMoney(account, 5n)) && (await request(app).get(statementUrl(org.id, account.id, {})).set(bearer(token))).body.data.lines[0]) as { entry_id: string };
    // A valid interval (the app's clock is a minute ahead: `to` is settled), signed with the
    // app's secret: only the entry id is wrong.
    const from = new Date(Date.now() - 86_400_000);
    const to = new Date(Date.now() + 1000);
    const forged = (id: string) => encodeStatementCursor(cursorSecret, { entryId: id, from, to, requestedTo: null });
    const genuine = await request(app).get(statementUrl(org.id, account.id, { starting_after: forged(entryId) })).set(bearer(token));
    expect(genuine.status, JSON.stringify(genuine.body)).toBe(200);
    for (const cursor of [forged('9223372036854775808'), forged('9999999999999999999'), entryId, 'djE6', '!!', forged(entryId).slice(0, -2)]) {
      const res = await request(app).get(`${statementUrl(org.id, account.id, {})}?starting_after=${encodeURIComponent(cursor)}`).set(bearer(token));
      expect(res.status, `${cursor}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain('query.starting_after');
    }
    // The largest bigint is a well-formed cursor of no line of this statement: the same 400.
    const max = await request(app).get(statementUrl(org.id, account.id, { starting_after: forged('9223372036854775807') })).set(bearer(token));
    expect(max.status, JSON.stringify(max.body)).toBe(400);
    expect(max.body).toMatchObject({ success: false, error: 'ValidationError', details: [{ field: 'query.starting_after' }] });
  });

  it('a cursor is signed: one with edited digits, signed with another secret, or whose interval breaks the rules is a 400', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const from = new Date(Date.now() - 1000);
    for (const amount of [1n, 2n, 3n]) await moveMoney(account, amount);
    const to = new Date(Date.now() + 1000);
    const get = (cursor: string) => request(app).get(statementUrl(org.id, account.id, { limit: 1, starting_after: cursor })).set(bearer(token));
    const first = await request(app).get(statementUrl(org.id, account.id, { from, to, limit: 1 })).set(bearer(token));
    const cursor = first.body.data.next_cursor as string;
    expect((await get(cursor)).status).toBe(200);
    const entryId = first.body.data.lines[0].entry_id as string;

    // The issued token with its body edited and re-encoded as valid base64url, signature kept:
    // an earlier `from` (and a later entry), a `to` an hour later.
    const bytes = Buffer.from(cursor, 'base64url');
    const body = bytes.subarray(0, bytes.length - 32).toString('utf8');
    const signature = bytes.subarray(bytes.length - 32);
    expect(body).toBe(`v1:${entryId}:${from.getTime()}:${to.getTime()}:`);
    const edit = (text: string) => Buffer.concat([Buffer.from(text, 'utf8'), signature]).toString('base64url');
    const edited = [
      edit(`v1:${entryId}:0:${to.getTime()}:`),
      edit(`v1:${entryId}:${from.getTime()}:${to.getTime() + 3_600_000}:`),
      edit(`v1:${BigInt(entryId) + 1n}:${from.getTime()}:${to.getTime()}:`),
      // Signed for this very cursor, but with another secret.
      encodeStatementCursor('another-secret-another-secret-0123456789', { entryId, from, to, requestedTo: null }),
    ];
    // Validly signed, but no page of this API has such an interval: `to` past the settle bound
    // (the app's clock is 60 s ahead, so its bound is now + 45 s), from = 0 with `to` near now
    // (longer than 469 days), and from after to.
    const signed = (f: Date, t: Date) => encodeStatementCursor(cursorSecret, { entryId, from: f, to: t, requestedTo: null });
    const lawless = [
      signed(from, new Date(Date.now() + 120_000)),
      signed(new Date(0), to),
      signed(to, from),
    ];
    expect((await get(signed(from, to))).status, 'the same cursor, signed and lawful, is accepted').toBe(200);
    for (const forged of [...edited, ...lawless]) {
      const res = await get(forged);
      expect(res.status, `${Buffer.from(forged, 'base64url').subarray(0, -32).toString()}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: 'ValidationError', details: [{ field: 'query.starting_after' }] });
    }
  });

  it('next_cursor is opaque and carries the interval: the next page keeps it when from/to are omitted, and a different from or to is a 400', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const from = new Date(Date.now() - 1000);
    for (const amount of [1n, 2n, 3n]) await moveMoney(account, amount);
    const to = new Date(Date.now() + 1000);
    const first = await request(app).get(statementUrl(org.id, account.id, { from, to, limit: 1 })).set(bearer(token));
    expect(first.status).toBe(200);
    const cursor = first.body.data.next_cursor as string;
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursor).not.toBe(first.body.data.lines[0].entry_id);

    const repeated = await request(app).get(statementUrl(org.id, account.id, { from, to, limit: 1, starting_after: cursor })).set(bearer(token));
    const omitted = await request(app).get(statementUrl(org.id, account.id, { limit: 1, starting_after: cursor })).set(bearer(token));
    for (const res of [repeated, omitted]) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toMatchObject({ from: from.toISOString(), to: to.toISOString(), entry_count: 3 });
      expect(res.body.data.lines.map((l: { amount: string }) => l.amount)).toEqual(['2']);
    }
    for (const [query, field] of [
      [{ from: new Date(from.getTime() - 1), to }, 'query.from'],
      [{ from, to: new Date(to.getTime() + 1) }, 'query.to'],
      [{ to: new Date(to.getTime() - 1) }, 'query.to'],
    ] as const) {
      const res = await request(app).get(statementUrl(org.id, account.id, { ...query, limit: 1, starting_after: cursor })).set(bearer(token));
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toBe('ValidationError');
      expect(res.body.details.map((d: { field: string }) => d.field)).toEqual(['query.starting_after', field]);
    }
    const precise = await request(app).get(`${statementUrl(org.id, account.id, { limit: 1, starting_after: cursor })}&from=2026-01-01T00:00:00.0000001Z`).set(bearer(token));
    expect(precise.status).toBe(400);
    expect(precise.body.details).toEqual([expect.objectContaining({ field: 'query.from' })]);
  });

  it('to defaults to, and is capped at, now minus the 15-second settle margin (JSON and CSV); pages of a capped interval stay on it', async () => {
    let clock = new Date(Date.now() + 5_000);
    const clocked = await buildTestApp({ now: () => clock });
    const own = await createOrganization();
    const ownToken = await accessTokenFor(clocked, await createMember(own, 'owner'));
    const account = await createOrgAccount(own, { currency: 'XOF' });
    for (const amount of [10n, 20n, 30n]) await moveMoney(account, amount);
    const get = (query: Parameters<typeof statementUrl>[2]) => request(clocked).get(statementUrl(own.id, account.id, query)).set(bearer(ownToken));
    const settled = () => new Date(clock.getTime() - 15_000).toISOString();

    // The entries were booked less than 15 s before the clock: not settled, not listed.
    const byDefault = await get({});
    expect(byDefault.status).toBe(200);
    expect(byDefault.body.data).toMatchObject({ to: settled(), entry_count: 0, closing_balance: '0' });
    const future = new Date(clock.getTime() + 3_600_000);
    const capped = await get({ to: future });
    expect(capped.body.data).toMatchObject({ to: settled(), entry_count: 0 });
    const csv = await get({ to: future, format: 'csv' });
    expect(parseCsv(csv.text).at(-1)?.[4]).toBe(settled());
    const tooLate = await get({ from: new Date(clock.getTime() - 10_000) });
    expect(tooLate.status).toBe(400);
    expect(tooLate.body.details).toEqual([expect.objectContaining({ field: 'query.from', message: expect.stringMatching(/capped/) })]);

    // A minute later they are settled; a page walk keeps its interval while the clock moves on.
    clock = new Date(clock.getTime() + 60_000);
    const first = await get({ to: future, limit: 2 });
    expect(first.body.data).toMatchObject({ to: settled(), entry_count: 3, closing_balance: '60' });
    const firstTo = first.body.data.to;
    clock = new Date(clock.getTime() + 60_000);
    const second = await get({ to: future, limit: 2, starting_after: first.body.data.next_cursor });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.data).toMatchObject({ to: firstTo, entry_count: 3, has_more: false });
    expect(second.body.data.lines.map((l: { amount: string }) => l.amount)).toEqual(['30']);
  });

  it('streams CSV (format=csv or Accept: text/csv), RFC 4180, equal to the JSON statement', async () => {
    const account = await createOrgAccount(org, { currency: 'USD' });
    const from = new Date(Date.now() - 1000);
    await moveMoney(account, 1_000_00n, { reference: 'ORDER "7", rush', counterparty: '=HYPERLINK("x")' });
    await moveMoney(account, -250_50n, { description: 'Line one\nline two' });
    await moveMoney(account, 1n, { reference: 'ORDER-9' });
    const to = new Date(Date.now() + 1000);

    const json = (await request(app).get(statementUrl(org.id, account.id, { from, to })).set(bearer(token))).body.data;
    const viaFormat = await request(app).get(statementUrl(org.id, account.id, { from, to, format: 'csv' })).set(bearer(token));
    const viaAccept = await request(app).get(statementUrl(org.id, account.id, { from, to })).set(bearer(token)).set('Accept', 'text/csv');
    for (const res of [viaFormat, viaAccept]) {
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/csv/);
      expect(res.headers['content-disposition']).toMatch(new RegExp(`^attachment; filename="statement-${account.id}-\\d{8}T\\d{6}Z-\\d{8}T\\d{6}Z\\.csv"$`));
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
      expect(res.headers['ratelimit']).toMatch(/^"api"; r=\d+; t=\d+$/);
      expect(res.headers['vary']).toMatch(/Accept/i);
      expect(res.headers['cache-control']).toBe('no-store');
    }
    expect(viaAccept.text).toBe(viaFormat.text);
    expect(viaFormat.text.endsWith('\r\n')).toBe(true);
    // Every cell is quoted, so no `,` or `;` inside a value can open another cell.
    expect(viaFormat.text.split('\r\n').filter(Boolean).every((row) => row.startsWith('"') && row.endsWith('"'))).toBe(true);
    const rows = parseCsv(viaFormat.text);
    expect(rows[0]).toEqual(['type', 'entry_id', 'posting_id', 'posting_kind', 'booked_at', 'description', 'counterparty', 'amount', 'running_balance', 'currency']);
    const records = rows.slice(1).map((cells) => Object.fromEntries((rows[0] as string[]).map((name, i) => [name, cells[i]])));
    expect(records[0]).toMatchObject({ type: 'opening_balance', booked_at: json.from, running_balance: json.opening_balance, currency: 'USD' });
    expect(records[records.length - 1]).toMatchObject({ type: 'closing_balance', booked_at: json.to, running_balance: json.closing_balance, currency: 'USD' });
    const unneutralise = (value: string) => (value.startsWith("'") ? value.slice(1) : value);
    expect(
      records.slice(1, -1).map((r) => ({
        entry_id: r.entry_id,
        posting_id: r.posting_id,
        posting_kind: r.posting_kind,
        booked_at: r.booked_at,
        description: unneutralise(r.description as string),
        counterparty: r.counterparty === '' ? null : unneutralise(r.counterparty as string),
        amount: r.amount,
        running_balance: r.running_balance,
      })),
    ).toEqual(json.lines);
    // A formula-looking counterparty is neutralised; quotes, commas and line breaks are quoted.
    expect(records[1]?.counterparty).toBe('\'=HYPERLINK("x")');
    expect(json.lines[1].description).toBe('Line one line two');
    expect(json.lines[0].description).toBe('Test payment received - ORDER "7", rush');
  });

  it('format=json wins over Accept: text/csv; limit or starting_after with CSV is refused', async () => {
    const account = await createOrgAccount(org);
    const json = await request(app).get(statementUrl(org.id, account.id, { format: 'json' })).set(bearer(token)).set('Accept', 'text/csv');
    expect(json.status).toBe(200);
    expect(json.body.data.lines).toEqual([]);
    const bad = await request(app).get(statementUrl(org.id, account.id, { format: 'csv', limit: 10 })).set(bearer(token));
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: 'ValidationError' });
  });

  it('defaults to the last 30 days', async () => {
    const account = await createOrgAccount(org);
    const before = Date.now();
    const res = await request(app).get(statementUrl(org.id, account.id, {})).set(bearer(token));
    expect(res.status).toBe(200);
    const from = Date.parse(res.body.data.from);
    const to = Date.parse(res.body.data.to);
    expect(to).toBeGreaterThanOrEqual(before);
    expect(to - from).toBe(30 * 86_400_000);
  });

  it('bounds the interval: at most 469 days, from < to, valid date-times', async () => {
    const account = await createOrgAccount(org);
    const to = new Date('2026-06-01T00:00:00Z');
    const ok = await request(app).get(statementUrl(org.id, account.id, { from: new Date(to.getTime() - 469 * 86_400_000), to })).set(bearer(token));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const cases: Array<[Record<string, string>, string]> = [
      [{ from: new Date(to.getTime() - 469 * 86_400_000 - 1).toISOString(), to: to.toISOString() }, 'query.to'],
      [{ from: '2024-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'query.to'],
      [{ from: to.toISOString(), to: to.toISOString() }, 'query.from'],
      [{ from: '2026-06-02T00:00:00Z', to: to.toISOString() }, 'query.from'],
      [{ from: '2026-05-01T00:00:00.0001Z', to: to.toISOString() }, 'query.from'],
      [{ to: '2026-05-01T00:00:00.123456Z' }, 'query.to'],
      [{ from: 'yesterday' }, 'query.from'],
      [{ to: '2026-13-45T00:00:00Z' }, 'query.to'],
    ];
    for (const [query, field] of cases) {
      for (const format of ['json', 'csv']) {
        const res = await request(app)
          .get(`${statementUrl(org.id, account.id, {})}?${new URLSearchParams({ ...query, format })}`)
          .set(bearer(token));
        expect(res.status, `${JSON.stringify(query)} ${format}: ${res.text}`).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
        expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
      }
    }
  });

  it('answers 404 AccountNotFound for an unknown account or one of another organisation (JSON and CSV)', async () => {
    const foreign = await createOrgAccount(await createOrganization(), { currency: 'XOF' });
    await moveMoney(foreign, 10n);
    for (const id of [foreign.id, '00000000-0000-4000-8000-000000000000']) {
      for (const format of ['json', 'csv'] as const) {
        const res = await request(app).get(statementUrl(org.id, id, { format })).set(bearer(token));
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ success: false, error: 'AccountNotFound', message: 'Account not found in this organisation.' });
      }
    }
    const notUuid = await request(app).get(`/api/business/organizations/${org.id}/accounts/abc/statement`).set(bearer(token));
    expect(notUuid.status).toBe(400);
  });

  it('applies the financial roles: cashier 403, outsider 404', async () => {
    const account = await createOrgAccount(org);
    const cashier = await accessTokenFor(app, await createMember(org, 'cashier'));
    const res = await request(app).get(statementUrl(org.id, account.id, {})).set(bearer(cashier));
    expect(res.status).toBe(403);
    const outsider = await accessTokenFor(app, await createMember(await createOrganization(), 'owner'));
    expect((await request(app).get(statementUrl(org.id, account.id, { format: 'csv' })).set(bearer(outsider))).status).toBe(404);
    for (const role of ['owner', 'admin', 'representative', 'director', 'finance_manager'] as const) {
      const t = await accessTokenFor(app, await createMember(org, role));
      expect((await request(app).get(statementUrl(org.id, account.id, {})).set(bearer(t))).status, role).toBe(200);
    }
  });
});
