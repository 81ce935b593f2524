import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrganization, memberToken } from '../support/factories';
import { createCustomer, createDocument } from '../support/invoice-factories';

let app: App;

const base = businessPath;

/** An organisation with an owner, a customer and a helper to call its routes. */
async function setup() {
  const org = await createOrganization();
  const token = await memberToken(app, org, 'owner');
  const customer = await createCustomer(org);
  const get = (path: string) => request(app).get(`${base(org.id)}${path}`).set(bearer(token));
  const post = (path: string, body?: object) => {
    const call = request(app).post(`${base(org.id)}${path}`).set(bearer(token));
    return body === undefined ? call : call.send(body);
  };
  const draft = async (overrides: Record<string, unknown> = {}) => {
    const res = await post('/invoices', {
      kind: 'invoice',
      customer_id: customer.id,
      currency: 'XOF',
      line_items: [{ description: 'Consulting', quantity: 2, unit_amount: '50000', tax_rate_bps: 1800 }],
      ...overrides,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data as { id: string; status: string; number: string | null; total: string };
  };
  return { org, token, customer, get, post, draft };
}

/** An ISO timestamp taken while the request ran (the service's clock, between `before` and `after`). */
function expectStampedDuring(timestamp: unknown, before: number, after: number): number {
  expect(typeof timestamp, String(timestamp)).toBe('string');
  const at = Date.parse(timestamp as string);
  expect(at, String(timestamp)).toBeGreaterThanOrEqual(before);
  expect(at, String(timestamp)).toBeLessThanOrEqual(after);
  return at;
}

const DAY_MS = 86_400_000;

beforeAll(async () => {
  app = await buildTestApp();
});

describe('GET /business/organizations/{orgId}/invoices', () => {
  it('lists newest first with cursor pagination (starting_after, has_more, next_cursor)', async () => {
    const { org, get } = await setup();
    const t0 = Date.now() - 60_000;
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await createDocument(org, { createdAt: new Date(t0 + i * 1000) })).id);
    const newestFirst = [...ids].reverse();

    const first = await get('/invoices?limit=2');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data.object).toBe('list');
    expect(first.body.data.data.map((d: { id: string }) => d.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.body.data.has_more).toBe(true);
    expect(first.body.data.next_cursor).toBe(newestFirst[1]);

    const second = await get(`/invoices?limit=2&starting_after=${first.body.data.next_cursor}`);
    expect(second.body.data.data.map((d: { id: string }) => d.id)).toEqual(newestFirst.slice(2, 4));
    const third = await get(`/invoices?limit=2&starting_after=${second.body.data.next_cursor}`);
    expect(third.body.data.data.map((d: { id: string }) => d.id)).toEqual(newestFirst.slice(4));
    expect(third.body.data.has_more).toBe(false);
    expect(third.body.data.next_cursor).toBeNull();
  });

  it('sends the database-rendered page as is in production: the same bytes, type and length as the validated path (which parses it for the contract check)', async () => {
    const { org, token, draft } = await setup();
    await draft({ memo: 'Quote "marks", a back\\slash, a tab\t and é€' });
    await draft();
    // NODE_ENV=test validates responses, so its app parses the rendered text before sending it.
    const production = await buildTestApp({ config: { validateResponses: false } });
    const validated = await request(app).get(`${base(org.id)}/invoices?limit=1`).set(bearer(token));
    const sentAsIs = await request(production).get(`${base(org.id)}/invoices?limit=1`).set(bearer(token));
    expect(validated.status).toBe(200);
    expect(sentAsIs.status).toBe(200);
    expect(sentAsIs.text).toBe(validated.text);
    expect(sentAsIs.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(sentAsIs.headers['content-type']).toBe(validated.headers['content-type']);
    expect(sentAsIs.headers['content-length']).toBe(validated.headers['content-length']);
    expect(sentAsIs.body.data.has_more).toBe(true);
  });

  it('breaks ties of equal creation times by id, so no document is skipped or repeated across pages', async () => {
    const { org, get } = await setup();
    const at = new Date(Date.now() - 10_000);
    const ids = new Set<string>();
    for (let i = 0; i < 7; i += 1) ids.add((await createDocument(org, { createdAt: at })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(`/invoices?limit=3${cursor ? `&starting_after=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.data.map((d: { id: string }) => d.id));
      cursor = res.body.data.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(7);
    expect(new Set(seen)).toEqual(ids);
  });

  it('filters by kind, status and customer_id, combined', async () => {
    const { org, get } = await setup();
    const other = await createCustomer(org);
    const mine = await createCustomer(org);
    const paid = await createDocument(org, { kind: 'invoice', status: 'paid', customerId: mine.id });
    await createDocument(org, { kind: 'invoice', status: 'open', customerId: mine.id });
    await createDocument(org, { kind: 'invoice', status: 'paid', customerId: other.id });
    const quote = await createDocument(org, { kind: 'quote', status: 'open', customerId: mine.id });
    const note = await createDocument(org, { kind: 'credit_note', status: 'issued', customerId: mine.id, invoiceId: paid.id, total: '10' });

    const byKind = await get('/invoices?kind=quote');
    expect(byKind.body.data.data.map((d: { id: string }) => d.id)).toEqual([quote.id]);
    const byStatus = await get('/invoices?status=paid');
    expect(byStatus.body.data.data).toHaveLength(2);
    expect(byStatus.body.data.data.every((d: { status: string }) => d.status === 'paid')).toBe(true);
    const byCustomer = await get(`/invoices?customer_id=${mine.id}`);
    expect(byCustomer.body.data.data).toHaveLength(4);
    const all = await get(`/invoices?kind=invoice&status=paid&customer_id=${mine.id}`);
    expect(all.body.data.data.map((d: { id: string }) => d.id)).toEqual([paid.id]);
    const notes = await get('/invoices?kind=credit_note&status=issued');
    expect(notes.body.data.data.map((d: { id: string; invoice_id: string }) => [d.id, d.invoice_id])).toEqual([[note.id, paid.id]]);
    const unknownCustomer = await get('/invoices?customer_id=00000000-0000-4000-8000-000000000000');
    expect(unknownCustomer.status).toBe(200);
    expect(unknownCustomer.body.data.data).toEqual([]);
  });

  it('returns only the organisation’s documents, even when filtering by another organisation’s customer', async () => {
    const { org, get } = await setup();
    const foreign = await createOrganization();
    const foreignCustomer = await createCustomer(foreign);
    await createDocument(foreign, { customerId: foreignCustomer.id });
    const mine = await createDocument(org);
    const res = await get('/invoices');
    expect(res.body.data.data.map((d: { id: string }) => d.id)).toEqual([mine.id]);
    const filtered = await get(`/invoices?customer_id=${foreignCustomer.id}`);
    expect(filtered.body.data.data).toEqual([]);
  });

  it('defaults to 50 and accepts the bounds 1 and 500', async () => {
    const { org, get } = await setup();
    for (let i = 0; i < 3; i += 1) await createDocument(org);
    expect((await get('/invoices?limit=1')).body.data.data).toHaveLength(1);
    const max = await get('/invoices?limit=500');
    expect(max.status).toBe(200);
    expect(max.body.data.data).toHaveLength(3);
    expect((await get('/invoices')).body.data.data).toHaveLength(3);
  });

  it.each([
    ['limit=0', 'query.limit'],
    ['limit=501', 'query.limit'],
    ['limit=1.5', 'query.limit'],
    ['limit=abc', 'query.limit'],
    ['limit=-1', 'query.limit'],
    ['kind=receipt', 'query.kind'],
    ['status=unknown', 'query.status'],
    ['customer_id=not-a-uuid', 'query.customer_id'],
    ['starting_after=nope', 'query.starting_after'],
    ['unknown=1', 'query.unknown'],
    ['kind=credit_note&status=paid', 'query.status'],
    ['kind=quote&status=paid', 'query.status'],
    ['kind=invoice&status=accepted', 'query.status'],
    ['kind=credit_note&status=open', 'query.status'],
  ])('answers 400 ValidationError for %s', async (query, field) => {
    const { get } = await setup();
    const res = await get(`/invoices?${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
  });

  it('answers 400 for a starting_after that is not a document of the organisation', async () => {
    const { get } = await setup();
    const foreignDoc = await createDocument(await createOrganization());
    for (const id of [foreignDoc.id, '00000000-0000-4000-8000-000000000000']) {
      const res = await get(`/invoices?starting_after=${id}`);
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual([expect.objectContaining({ field: 'query.starting_after' })]);
    }
  });

  it('answers 401 without a token, 404 for a foreign organisation, 403 for a cashier', async () => {
    const { org } = await setup();
    expect((await request(app).get(`${base(org.id)}/invoices`)).status).toBe(401);
    const outsider = await memberToken(app, await createOrganization(), 'owner');
    const foreign = await request(app).get(`${base(org.id)}/invoices`).set(bearer(outsider));
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('NotFound');
    const cashier = await memberToken(app, org, 'cashier');
    const forbidden = await request(app).get(`${base(org.id)}/invoices`).set(bearer(cashier));
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toBe('InsufficientRole');
    for (const role of ['owner', 'admin', 'representative', 'director', 'finance_manager'] as const) {
      const res = await request(app).get(`${base(org.id)}/invoices`).set(bearer(await memberToken(app, org, role)));
      expect(res.status, role).toBe(200);
    }
  });
});

describe('rate limiting', () => {
  it('answers 429 RateLimitExceeded with Retry-After on the list and on a write (finalize) once the caller exceeds the limit', async () => {
    const limited = await buildTestApp({ env: { RATE_LIMIT_AUTHENTICATED: '3' } });
    const org = await createOrganization();
    const token = await accessTokenFor(limited, await createMember(org, 'owner'));
    const draft = await createDocument(org, {});
    for (let i = 0; i < 3; i += 1) expect((await request(limited).get(`${base(org.id)}/invoices`).set(bearer(token))).status).toBe(200);
    for (const res of [
      await request(limited).get(`${base(org.id)}/invoices`).set(bearer(token)),
      await request(limited).post(`${base(org.id)}/invoices/${draft.id}/finalize`).set(bearer(token)),
    ]) {
      expect(res.status).toBe(429);
      expect(res.body).toMatchObject({ success: false, error: 'RateLimitExceeded' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers['ratelimit']).toMatch(/^"api"; r=0; t=\d+$/);
    }
    // Refused before the handler: the draft was not finalised.
    expect((await testKnex()('documents').where({ id: draft.id }).first('status')).status).toBe('draft');
  });
});

describe('invoice lifecycle', () => {
  it('creates a draft with exact totals (bigint minor units, tax rounded half up: 0.05 EUR at 10 % is 0.01) and no number', async () => {
    const { draft } = await setup();
    const doc = await draft({
      currency: 'EUR',
      line_items: [
        { description: 'Website', quantity: 3, unit_amount: '1250.55', tax_rate_bps: 2000 },
        { description: 'Hosting', quantity: 1, unit_amount: '0.05', tax_rate_bps: 1000 },
      ],
    });
    expect(doc).toMatchObject({ status: 'draft', number: null, subtotal: '3751.70', tax: '750.34', total: '4502.04', amount_due: '4502.04' });
  });

  it('refuses amounts finer than the currency, unknown currencies and foreign customers', async () => {
    const { post, customer } = await setup();
    const body = { kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'x', quantity: 1, unit_amount: '10.5' }] };
    const fine = await post('/invoices', body);
    expect(fine.status).toBe(400);
    expect(fine.body.details[0].field).toBe('body.line_items[0].unit_amount');
    const unknown = await post('/invoices', { ...body, currency: 'ZZZ', line_items: [{ description: 'x', quantity: 1, unit_amount: '10' }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details[0].field).toBe('body.currency');
    const foreignCustomer = await createCustomer(await createOrganization());
    const foreign = await post('/invoices', { ...body, customer_id: foreignCustomer.id, line_items: [{ description: 'x', quantity: 1, unit_amount: '10' }] });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('CustomerNotFound');
    const extra = await post('/invoices', { ...body, surprise: true });
    expect(extra.status).toBe(400);
    const credit = await post('/invoices', { ...body, kind: 'credit_note' });
    expect(credit.status).toBe(400);
  });

  it('finalises with a number, then pays; and refuses transitions the status does not allow (409) or the kind does not have (422)', async () => {
    const { draft, post } = await setup();
    const doc = await draft();
    const paidDraft = await post(`/invoices/${doc.id}/pay`);
    expect(paidDraft.status).toBe(409);
    expect(paidDraft.body).toMatchObject({ error: 'InvalidStatusTransition', details: { status: 'draft', action: 'pay' } });

    let before = Date.now();
    const open = await post(`/invoices/${doc.id}/finalize`);
    expect(open.status, JSON.stringify(open.body)).toBe(200);
    expect(open.body.data.status).toBe('open');
    expect(open.body.data.number).toMatch(new RegExp(`^INV-${new Date().getUTCFullYear()}-000001$`));
    expect(open.body.data.issue_date).toBe(new Date().toISOString().slice(0, 10));
    const finalizedAt = expectStampedDuring(open.body.data.status_transitions.finalized_at, before, Date.now());
    // Without a due date of its own, an invoice is due 30 days after it was issued.
    expect(open.body.data.due_date).toBe(new Date(finalizedAt + 30 * DAY_MS).toISOString().slice(0, 10));
    expect(open.body.data.status_transitions).toMatchObject({ paid_at: null, voided_at: null, marked_uncollectible_at: null });

    expect((await post(`/invoices/${doc.id}/finalize`)).status).toBe(409);
    const accept = await post(`/invoices/${doc.id}/accept`);
    expect(accept.status).toBe(422);
    expect(accept.body.error).toBe('ActionNotApplicable');
    expect((await post(`/invoices/${doc.id}/cancel`)).body.error).toBe('ActionNotApplicable');

    before = Date.now();
    const paid = await post(`/invoices/${doc.id}/pay`);
    expect(paid.status).toBe(200);
    expect(paid.body.data).toMatchObject({ status: 'paid', amount_due: '0' });
    expectStampedDuring(paid.body.data.status_transitions.paid_at, before, Date.now());
    expect(paid.body.data.status_transitions.finalized_at).toBe(open.body.data.status_transitions.finalized_at);
    for (const action of ['pay', 'void', 'mark-uncollectible', 'finalize']) {
      const res = await post(`/invoices/${doc.id}/${action}`);
      expect(res.status, action).toBe(409);
      expect(res.body.error).toBe('InvalidStatusTransition');
    }
  });

  it('open -> uncollectible -> paid, open -> uncollectible -> void, open -> void', async () => {
    const { draft, post } = await setup();
    const a = await draft();
    await post(`/invoices/${a.id}/finalize`);
    expect((await post(`/invoices/${a.id}/mark-uncollectible`)).body.data.status).toBe('uncollectible');
    expect((await post(`/invoices/${a.id}/mark-uncollectible`)).status).toBe(409);
    expect((await post(`/invoices/${a.id}/pay`)).body.data.status).toBe('paid');

    const b = await draft();
    await post(`/invoices/${b.id}/finalize`);
    const beforeMark = Date.now();
    const marked = await post(`/invoices/${b.id}/mark-uncollectible`);
    const markedAt = expectStampedDuring(marked.body.data.status_transitions.marked_uncollectible_at, beforeMark, Date.now());
    expect(marked.body.data.status_transitions.voided_at).toBeNull();
    const beforeVoid = Date.now();
    const voided = await post(`/invoices/${b.id}/void`);
    expect(voided.body.data).toMatchObject({ status: 'void', amount_due: '0' });
    expectStampedDuring(voided.body.data.status_transitions.voided_at, Math.max(beforeVoid, markedAt), Date.now());
    expect(voided.body.data.status_transitions.marked_uncollectible_at).toBe(marked.body.data.status_transitions.marked_uncollectible_at);
    expect(voided.body.data.status_transitions.paid_at).toBeNull();

    const c = await draft();
    expect((await post(`/invoices/${c.id}/void`)).status).toBe(409);
    await post(`/invoices/${c.id}/finalize`);
    expect((await post(`/invoices/${c.id}/void`)).body.data.status).toBe('void');
    expect((await post(`/invoices/${c.id}/pay`)).status).toBe(409);
  });

  it('numbers each kind in its own sequence, and never reuses a number', async () => {
    const { draft, post } = await setup();
    const year = new Date().getUTCFullYear();
    const numbers: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const doc = await draft();
      numbers.push((await post(`/invoices/${doc.id}/finalize`)).body.data.number);
    }
    expect(numbers).toEqual([1, 2, 3].map((n) => `INV-${year}-00000${n}`));
    const quote = await draft({ kind: 'quote' });
    expect((await post(`/invoices/${quote.id}/finalize`)).body.data.number).toBe(`QUO-${year}-000001`);
  });

  it('answers 422 NumberingExhausted (never a 500) once the sequence reached the format maximum, and the document stays a draft', async () => {
    const { org, draft, post, get } = await setup();
    const year = new Date().getUTCFullYear();
    await testKnex()('document_number_counters').insert([
      { organization_id: org.id, kind: 'invoice', year, last_number: 999_999_998 },
      { organization_id: org.id, kind: 'credit_note', year, last_number: 999_999_999 },
    ]);
    const last = await draft();
    const lastRes = await post(`/invoices/${last.id}/finalize`);
    expect(lastRes.status, JSON.stringify(lastRes.body)).toBe(200);
    expect(lastRes.body.data.number).toBe(`INV-${year}-999999999`);

    const next = await draft();
    const refused = await post(`/invoices/${next.id}/finalize`);
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body).toMatchObject({ success: false, error: 'NumberingExhausted', details: { kind: 'invoice', year } });
    expect((await get(`/invoices/${next.id}`)).body.data).toMatchObject({ status: 'draft', number: null });

    const credit = await post(`/invoices/${last.id}/credit-notes`, { reason: 'duplicate', line_items: [{ description: 'x', quantity: 1, unit_amount: '1' }] });
    expect(credit.status, JSON.stringify(credit.body)).toBe(422);
    expect(credit.body).toMatchObject({ error: 'NumberingExhausted', details: { kind: 'credit_note', year } });

    const counters = await testKnex()('document_number_counters').where({ organization_id: org.id }).orderBy('kind').select('kind', 'last_number');
    expect(counters.map((c) => [c.kind, Number(c.last_number)])).toEqual([['credit_note', 999_999_999], ['invoice', 999_999_999]]);
  });

  it('20 parallel finalisations of distinct drafts of one organisation get 20 distinct consecutive numbers', async () => {
    const { draft, post } = await setup();
    const year = new Date().getUTCFullYear();
    const drafts = [];
    for (let i = 0; i < 20; i += 1) drafts.push(await draft());
    const results = await Promise.all(drafts.map((d) => post(`/invoices/${d.id}/finalize`)));
    for (const res of results) expect(res.status, JSON.stringify(res.body)).toBe(200);
    const numbers = results.map((r) => r.body.data.number as string).sort();
    expect(new Set(numbers).size).toBe(20);
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, i) => `INV-${year}-${String(i + 1).padStart(6, '0')}`));
  });

  it('answers 404 DocumentNotFound for a document of another organisation, and never changes it', async () => {
    const { post, get } = await setup();
    const foreign = await createDocument(await createOrganization(), { status: 'open' });
    for (const action of ['pay', 'void', 'finalize', 'accept', 'cancel', 'mark-uncollectible']) {
      const res = await post(`/invoices/${foreign.id}/${action}`);
      expect(res.status, action).toBe(404);
      expect(res.body.error).toBe('DocumentNotFound');
    }
    expect((await get(`/invoices/${foreign.id}`)).status).toBe(404);
    const credit = await post(`/invoices/${foreign.id}/credit-notes`, { reason: 'duplicate', line_items: [{ description: 'x', quantity: 1, unit_amount: '1' }] });
    expect(credit.status).toBe(404);
    const row = await testKnex()('documents').where({ id: foreign.id }).first('status');
    expect(row.status).toBe('open');
  });

  it('write routes need owner, admin or finance_manager', async () => {
    const { org, customer } = await setup();
    const body = { kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'x', quantity: 1, unit_amount: '10' }] };
    for (const role of ['representative', 'director', 'cashier'] as const) {
      const res = await request(app).post(`${base(org.id)}/invoices`).set(bearer(await memberToken(app, org, role))).send(body);
      expect(res.status, role).toBe(403);
    }
    for (const role of ['admin', 'finance_manager'] as const) {
      const res = await request(app).post(`${base(org.id)}/invoices`).set(bearer(await memberToken(app, org, role))).send(body);
      expect(res.status, role).toBe(201);
    }
  });
});

describe('quotes', () => {
  it('draft -> open -> accepted creates the draft invoice with the same lines', async () => {
    const { draft, post, get } = await setup();
    const quote = await draft({ kind: 'quote' });
    const before = Date.now();
    const open = await post(`/invoices/${quote.id}/finalize`);
    expect(open.body.data.status).toBe('open');
    // Without an expiry of its own, a quote expires 30 days after it was finalised, to the millisecond.
    const finalizedAt = expectStampedDuring(open.body.data.status_transitions.finalized_at, before, Date.now());
    expect(open.body.data.expires_at).toBe(new Date(finalizedAt + 30 * DAY_MS).toISOString());
    const accepted = await post(`/invoices/${quote.id}/accept`);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.data.status).toBe('accepted');
    const invoiceId = accepted.body.data.invoice_id;
    const invoice = await get(`/invoices/${invoiceId}`);
    expect(invoice.body.data).toMatchObject({ kind: 'invoice', status: 'draft', total: quote.total, customer_id: accepted.body.data.customer_id });
    expect(invoice.body.data.line_items).toEqual(accepted.body.data.line_items);
    expect((await post(`/invoices/${quote.id}/accept`)).status).toBe(409);
    expect((await post(`/invoices/${quote.id}/cancel`)).status).toBe(409);
    expect((await post(`/invoices/${quote.id}/pay`)).status).toBe(422);
  });

  it('cancels a draft or open quote', async () => {
    const { draft, post } = await setup();
    const a = await draft({ kind: 'quote' });
    expect((await post(`/invoices/${a.id}/cancel`)).body.data.status).toBe('canceled');
    const b = await draft({ kind: 'quote' });
    await post(`/invoices/${b.id}/finalize`);
    const before = Date.now();
    const canceled = await post(`/invoices/${b.id}/cancel`);
    expect(canceled.body.data.status).toBe('canceled');
    expectStampedDuring(canceled.body.data.status_transitions.canceled_at, before, Date.now());
    expect((await post(`/invoices/${b.id}/accept`)).status).toBe(409);
  });

  it('an open quote past its expiry is listed as canceled and cannot be accepted (409 QuoteExpired)', async () => {
    const { draft, post, get } = await setup();
    const quote = await draft({ kind: 'quote' });
    await post(`/invoices/${quote.id}/finalize`);
    const expiredAt = new Date(Date.now() - 1000);
    await testKnex()('documents').where({ id: quote.id }).update({ expires_at: expiredAt });
    // Read as canceled before anyone acts on it (no background job, no write on reads).
    expect((await get(`/invoices/${quote.id}`)).body.data.status).toBe('canceled');
    expect((await get('/invoices?kind=quote&status=open')).body.data.data).toEqual([]);
    const accept = await post(`/invoices/${quote.id}/accept`);
    expect(accept.status).toBe(409);
    expect(accept.body.error).toBe('QuoteExpired');
    const listed = await get('/invoices?kind=quote&status=canceled');
    expect(listed.body.data.data.map((d: { id: string }) => d.id)).toEqual([quote.id]);
    expect(listed.body.data.data[0].status_transitions.canceled_at).toBe(expiredAt.toISOString());
    expect(listed.body.data.data[0].invoice_id).toBeNull();
  });

  it('refuses an expiry in the past and a due_date on a quote', async () => {
    const { draft, post, customer } = await setup();
    await draft({ kind: 'quote', expires_at: new Date(Date.now() + 86_400_000).toISOString() });
    const base = { kind: 'quote', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'x', quantity: 1, unit_amount: '10' }] };
    expect((await post('/invoices', { ...base, expires_at: new Date(Date.now() - 1000).toISOString() })).status).toBe(400);
    expect((await post('/invoices', { ...base, due_date: '2099-01-01' })).status).toBe(400);
  });

  it('refuses an expiry from the year 10000 on (no four-digit year) with 400, and takes the last instant before it', async () => {
    const { post, customer } = await setup();
    const base = { kind: 'quote', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'x', quantity: 1, unit_amount: '10' }] };
    // 9999-12-31T23:00-05:00 is 10000-01-01T04:00Z.
    const late = await post('/invoices', { ...base, expires_at: '9999-12-31T23:00:00-05:00' });
    expect(late.status, JSON.stringify(late.body)).toBe(400);
    expect(late.body).toMatchObject({ success: false, error: 'ValidationError' });
    expect(JSON.stringify(late.body)).toContain('body.expires_at');
    const last = await post('/invoices', { ...base, expires_at: '9999-12-31T23:59:59.999Z' });
    expect(last.status, JSON.stringify(last.body)).toBe(201);
    expect(last.body.data.expires_at).toBe('9999-12-31T23:59:59.999Z');
  });
});

describe('impossible dates', () => {
  it('refuses a due_date or an expires_at that does not exist with 400, never a 500', async () => {
    const { post, customer } = await setup();
    const base = { customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'x', quantity: 1, unit_amount: '10' }] };
    for (const due_date of ['2099-02-30', '2099-13-01', '2099-00-10']) {
      const res = await post('/invoices', { ...base, kind: 'invoice', due_date });
      expect(res.status, `${due_date}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error).toBe('ValidationError');
    }
    for (const expires_at of ['2099-12-31T23:59:60Z', '2099-13-45T10:00:00Z']) {
      const res = await post('/invoices', { ...base, kind: 'quote', expires_at });
      expect(res.status, `${expires_at}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error).toBe('ValidationError');
    }
  });
});

describe('credit notes', () => {
  const line = (unit: string) => ({ reason: 'order_change', line_items: [{ description: 'Credit', quantity: 1, unit_amount: unit }] });

  it('issues numbered credit notes up to the remaining amount, never beyond, and voiding one gives its amount back', async () => {
    const { draft, post, get } = await setup();
    const invoice = await draft({ line_items: [{ description: 'x', quantity: 1, unit_amount: '1000' }] });
    const draftCredit = await post(`/invoices/${invoice.id}/credit-notes`, line('1'));
    expect(draftCredit.status).toBe(409);
    expect(draftCredit.body.error).toBe('InvoiceNotCreditable');
    await post(`/invoices/${invoice.id}/finalize`);

    const first = await post(`/invoices/${invoice.id}/credit-notes`, line('600'));
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data).toMatchObject({ kind: 'credit_note', status: 'issued', invoice_id: invoice.id, total: '600', credit_reason: 'order_change' });
    expect(first.body.data.number).toMatch(/^CN-\d{4}-000001$/);
    expect((await get(`/invoices/${invoice.id}`)).body.data).toMatchObject({ amount_credited: '600', amount_due: '400' });

    const tooMuch = await post(`/invoices/${invoice.id}/credit-notes`, line('401'));
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body).toMatchObject({ error: 'CreditNoteExceedsRemaining', details: { remaining: '400', requested: '401', currency: 'XOF' } });
    expect((await post(`/invoices/${invoice.id}/credit-notes`, line('400'))).status).toBe(201);
    expect((await post(`/invoices/${invoice.id}/credit-notes`, line('1'))).status).toBe(422);

    const voided = await post(`/invoices/${first.body.data.id}/void`);
    expect(voided.body.data.status).toBe('void');
    expect((await get(`/invoices/${invoice.id}`)).body.data).toMatchObject({ amount_credited: '400', amount_due: '600' });
    expect((await post(`/invoices/${first.body.data.id}/void`)).status).toBe(409);
    expect((await post(`/invoices/${first.body.data.id}/pay`)).status).toBe(422);
    expect((await post(`/invoices/${first.body.data.id}/credit-notes`, line('1'))).status).toBe(422);
  });

  it('credits a paid invoice, never a void one; refuses a zero credit note', async () => {
    const { draft, post } = await setup();
    const invoice = await draft({ line_items: [{ description: 'x', quantity: 1, unit_amount: '100' }] });
    await post(`/invoices/${invoice.id}/finalize`);
    await post(`/invoices/${invoice.id}/pay`);
    expect((await post(`/invoices/${invoice.id}/credit-notes`, line('0'))).status).toBe(400);
    expect((await post(`/invoices/${invoice.id}/credit-notes`, line('100'))).status).toBe(201);
    const other = await draft();
    await post(`/invoices/${other.id}/finalize`);
    await post(`/invoices/${other.id}/void`);
    expect((await post(`/invoices/${other.id}/credit-notes`, line('1'))).body.error).toBe('InvoiceNotCreditable');
  });

  it('concurrent credit notes never exceed the invoice together', async () => {
    const { draft, post, get } = await setup();
    const invoice = await draft({ line_items: [{ description: 'x', quantity: 1, unit_amount: '1000' }] });
    await post(`/invoices/${invoice.id}/finalize`);
    const results = await Promise.all(Array.from({ length: 10 }, () => post(`/invoices/${invoice.id}/credit-notes`, line('300'))));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 422)).toHaveLength(7);
    expect((await get(`/invoices/${invoice.id}`)).body.data.amount_credited).toBe('900');
    const numbers = results.filter((r) => r.status === 201).map((r) => r.body.data.number).sort();
    expect(numbers.map((n: string) => n.slice(-6))).toEqual(['000001', '000002', '000003']);
  });
});

describe('POST /business/organizations/{orgId}/customers', () => {
  it('creates a customer (e-mail lower-cased) and refuses a bad phone', async () => {
    const { post } = await setup();
    const res = await post('/customers', { name: 'Boutique Awa', email: 'Compta@Awa.Example', phone: '+2250701020304' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'Boutique Awa', email: 'compta@awa.example', phone: '+2250701020304' });
    expect((await post('/customers', { name: 'x', phone: '0701' })).status).toBe(400);
    expect((await post('/customers', { name: '' })).status).toBe(400);
  });
});

describe('Idempotency-Key on creations', () => {
  it('a retried draft creation with the same key creates nothing more and names the first document', async () => {
    const { org, token, customer } = await setup();
    const body = { kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'x', quantity: 1, unit_amount: '10' }] };
    const send = (key: string, payload: object = body) =>
      request(app).post(`${base(org.id)}/invoices`).set(bearer(token)).set('Idempotency-Key', key).send(payload);
    const first = await send('create-invoice-1');
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const replay = await send('create-invoice-1');
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ error: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'invoice', resource_id: first.body.data.id } });
    expect(replay.headers.location).toBe(`/api/business/organizations/${org.id}/invoices/${first.body.data.id}`);
    const reused = await send('create-invoice-1', { ...body, memo: 'another body' });
    expect(reused.status).toBe(422);
    expect(reused.body.error).toBe('IdempotencyKeyReused');
    expect((await send('create-invoice-2')).status).toBe(201);
    const count = await testKnex()('documents').where({ organization_id: org.id }).count<Array<{ count: string }>>('* as count');
    expect(Number(count[0]?.count)).toBe(2);
  });

  it('concurrent credit notes with one key issue exactly one', async () => {
    const { org, token, draft, post, get } = await setup();
    const invoice = await draft({ line_items: [{ description: 'x', quantity: 1, unit_amount: '1000' }] });
    await post(`/invoices/${invoice.id}/finalize`);
    const body = { reason: 'duplicate', line_items: [{ description: 'Credit', quantity: 1, unit_amount: '100' }] };
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        request(app).post(`${base(org.id)}/invoices/${invoice.id}/credit-notes`).set(bearer(token)).set('Idempotency-Key', 'credit-once').send(body),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409).every((r) => ['IdempotencyKeyAlreadyProcessed', 'ConcurrentOperation'].includes(r.body.error))).toBe(true);
    expect(results.filter((r) => r.status === 409)).toHaveLength(7);
    expect((await get(`/invoices/${invoice.id}`)).body.data.amount_credited).toBe('100');
  });

  it('a refused creation does not consume its key', async () => {
    const { org, token, customer } = await setup();
    const bad = { kind: 'invoice', customer_id: '00000000-0000-4000-8000-000000000000', currency: 'XOF', line_items: [{ description: 'x', quantity: 1, unit_amount: '10' }] };
    const refused = await request(app).post(`${base(org.id)}/invoices`).set(bearer(token)).set('Idempotency-Key', 'retry-me').send(bad);
    expect(refused.status).toBe(404);
    const retried = await request(app).post(`${base(org.id)}/invoices`).set(bearer(token)).set('Idempotency-Key', 'retry-me').send({ ...bad, customer_id: customer.id });
    // The corrected request may reuse the key: the refusal left nothing behind.
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    const again = await request(app).post(`${base(org.id)}/invoices`).set(bearer(token)).set('Idempotency-Key', 'retry-me').send({ ...bad, customer_id: customer.id });
    expect(again.status).toBe(409);
  });
});
