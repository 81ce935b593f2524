import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toPage, toRenderedPage } from '../../src/db/keyset';
import { formatMinor } from '../../src/modules/ledger';
import { InvoiceService, presentDocument } from '../../src/modules/invoices';
import { databaseKind, testKnex } from '../support/database';
import { createOrganization } from '../support/factories';
import { createCustomer } from '../support/invoice-factories';

/**
 * The invoices list renders its JSON in the database. What it renders must be what
 * the TypeScript presenter gives for the same row, byte for byte: presentDocument stays the one
 * definition of an Invoice (every other route answers through it), and the SQL is held to it
 * here over random rows, every kind and status, amounts up to the bigint range, microseconds
 * on every timestamp, quotes on both sides of their expiry and text that needs escaping.
 */
const knex = testKnex();

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

describe('format_minor (SQL) is formatMinor (TypeScript)', () => {
  it('for any bigint and every exponent 0 to 4, extremes included', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.oneof(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), fc.bigInt({ min: -100_000n, max: 100_000n }), fc.constantFrom(INT64_MIN, INT64_MAX, 0n, -1n, 1n)), fc.integer({ min: 0, max: 4 })), {
          minLength: 1,
          maxLength: 200,
        }),
        async (cases) => {
          const { rows } = await knex.raw<{ rows: Array<{ formatted: string }> }>(
            'SELECT format_minor(m, e) AS formatted FROM unnest(?::bigint[], ?::smallint[]) WITH ORDINALITY AS c(m, e, n) ORDER BY n',
            [cases.map(([minor]) => minor.toString()), cases.map(([, exponent]) => exponent)],
          );
          expect(rows.map((row) => row.formatted)).toEqual(cases.map(([minor, exponent]) => formatMinor(minor, exponent)));
        },
      ),
      { numRuns: 20 },
    );
  });
});

/** Text that JSON must escape (quotes, backslashes, control characters) or carry as is (any Unicode); PostgreSQL text holds no NUL. */
const text = (maxLength: number) =>
  fc.oneof(fc.string({ unit: 'binary-ascii', maxLength }), fc.string({ unit: 'grapheme', maxLength }), fc.constantFrom('"\\/\u2028\u001f', 'é€😀')).map((s) => s.replaceAll('\u0000', ''));

/** The years 1000 to 9999 (a quote may not expire later: the service refuses it). */
const MICROS_1000 = BigInt(Date.UTC(1000, 0, 1)) * 1000n;
const MICROS_10000 = BigInt(Date.UTC(10000, 0, 1)) * 1000n - 1n;
/** A timestamptz with microseconds (a JS Date keeps milliseconds: both sides must truncate alike). */
const timestamp = fc.oneof(fc.bigInt({ min: MICROS_1000, max: MICROS_10000 }), fc.bigInt({ min: 0n, max: 4_102_444_800_000_000n })).map((micros) => {
  // Floor division, so an instant before 1970 keeps its microseconds positive.
  const millis = micros >= 0n ? micros / 1000n : -((-micros + 999n) / 1000n);
  const iso = new Date(Number(millis)).toISOString();
  return `${iso.slice(0, 23)}${String(micros - millis * 1000n).padStart(3, '0')}Z`;
});
const calendarDate = fc.integer({ min: -365_000, max: 2_900_000 }).map((day) => new Date(Date.UTC(2000, 0, 1 + day)).toISOString().slice(0, 10));
const amount = fc.oneof(fc.bigInt({ min: 0n, max: 10n ** 6n }), fc.bigInt({ min: 0n, max: 2n ** 61n }));

const STATUSES = { invoice: ['draft', 'open', 'paid', 'void', 'uncollectible'], quote: ['draft', 'open', 'accepted', 'canceled'], credit_note: ['issued', 'void'] } as const;
const PREFIX = { invoice: 'INV', quote: 'QUO', credit_note: 'CN' } as const;

const lineItem = fc.record({
  description: text(60),
  quantity: fc.integer({ min: 1, max: 1_000_000 }),
  unit_amount_minor: amount.map(String),
  tax_rate_bps: fc.integer({ min: 0, max: 10_000 }),
  amount_minor: amount.map(String),
  tax_minor: amount.map(String),
});

const documentShape = fc
  .constantFrom('invoice', 'quote', 'credit_note')
  .chain((kind) =>
    fc.record({
      kind: fc.constant(kind),
      status: fc.constantFrom(...STATUSES[kind]),
      currency: fc.constantFrom('XOF', 'EUR', 'KWD'),
      lineItems: fc.array(lineItem, { maxLength: 3 }),
      subtotal: amount,
      tax: amount,
      creditedPermille: fc.integer({ min: 0, max: 1000 }),
      memo: fc.option(text(200), { nil: null }),
      issueDate: fc.option(calendarDate, { nil: null }),
      dueDate: fc.option(calendarDate, { nil: null }),
      expiresAt: fc.option(timestamp, { nil: null }),
      transitions: fc.array(fc.option(timestamp, { nil: null }), { minLength: 6, maxLength: 6 }),
      createdAt: timestamp,
      updatedAt: timestamp,
      withCustomer: fc.boolean(),
    }),
  );

type Shape = typeof documentShape extends fc.Arbitrary<infer T> ? T : never;

describe('the invoices list JSON (SQL) is presentDocument (TypeScript), byte for byte', () => {
  it('for random documents of every kind and status, read at a random instant', async () => {
    const org = await createOrganization();
    const customer = await createCustomer(org);
    // What credit notes and accepted quotes point at.
    const [anchor] = (await knex('documents')
      .insert({ organization_id: org.id, kind: 'invoice', status: 'draft', currency: 'XOF', line_items: '[]' })
      .returning('id')) as Array<{ id: string }>;
    let number = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(documentShape, { minLength: 1, maxLength: 6 }), timestamp, async (shapes: Shape[], asOfText) => {
        const asOf = new Date(asOfText);
        const ids: string[] = [];
        for (const shape of shapes) {
          number += 1;
          const total = shape.subtotal + shape.tax;
          const [row] = (await knex('documents')
            .insert({
              organization_id: org.id,
              kind: shape.kind,
              status: shape.status,
              number: shape.status === 'draft' ? null : `${PREFIX[shape.kind]}-2026-${String(number).padStart(9, '0')}`,
              customer_id: shape.withCustomer ? customer.id : null,
              currency: shape.currency,
              line_items: JSON.stringify(shape.lineItems),
              subtotal_minor: shape.subtotal.toString(),
              tax_minor: shape.tax.toString(),
              total_minor: total.toString(),
              credited_minor: shape.kind === 'invoice' ? ((total * BigInt(shape.creditedPermille)) / 1000n).toString() : '0',
              memo: shape.memo,
              issue_date: shape.issueDate,
              due_date: shape.dueDate,
              // Quotes on both sides of the instant they are read at (an open one past it reads canceled).
              expires_at: shape.kind === 'quote' ? shape.expiresAt : null,
              invoice_id: shape.kind === 'credit_note' || (shape.kind === 'quote' && shape.status === 'accepted') ? anchor?.id : null,
              credit_reason: shape.kind === 'credit_note' ? 'duplicate' : null,
              finalized_at: shape.transitions[0],
              paid_at: shape.transitions[1],
              voided_at: shape.transitions[2],
              marked_uncollectible_at: shape.transitions[3],
              accepted_at: shape.transitions[4],
              canceled_at: shape.transitions[5],
              created_at: shape.createdAt,
              updated_at: shape.updatedAt,
            })
            .returning('id')) as Array<{ id: string }>;
          ids.push(row?.id as string);
        }
        // The service reads both at `asOf`: the list (rendered in SQL) and each document (presented in TypeScript).
        const service = new InvoiceService(knex, { clock: () => asOf });
        const rendered = await service.listDocuments(org.id, { limit: 100 });
        const renderedById = new Map(rendered.map((row) => [row.id, row.json]));
        for (const id of ids) {
          expect(renderedById.get(id)).toBe(JSON.stringify(presentDocument(await service.getDocument(org.id, id))));
        }
        // The page around them is toPage's, written as JSON.stringify writes it.
        const limit = Math.max(1, rendered.length - 1);
        const page = toPage(rendered, limit);
        expect(toRenderedPage(rendered, limit).text).toBe(JSON.stringify({ ...page, data: page.data.map((row) => JSON.parse(row.json) as unknown) }));
        await knex('documents').whereIn('id', ids).delete();
      }),
      { numRuns: 40 },
    );
  });
});

// On a real server only: the embedded one does not keep named statements per connection.
describe.runIf(databaseKind() === 'postgres')('the invoices list statement', () => {
  it('settles on a generic plan: PostgreSQL plans it once per connection, not on every page', async () => {
    const org = await createOrganization();
    for (let i = 0; i < 3; i += 1) await knex('documents').insert({ organization_id: org.id, kind: 'invoice', status: 'draft', currency: 'XOF', line_items: '[]' });
    const service = new InvoiceService(knex, {});
    const plans = await knex.transaction(async (trx) => {
      // One connection (the transaction's), so its prepared statement is the one counted.
      const onOneConnection = new InvoiceService(trx, {});
      for (let run = 0; run < 8; run += 1) expect(await onOneConnection.listDocuments(org.id, { limit: 50 })).toHaveLength(3);
      const { rows } = await trx.raw<{ rows: Array<{ generic_plans: string; custom_plans: string }> }>(
        // The statement of a first page of up to 50 (its rows bounded by 51); other tests' pages may share the connection.
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'documents\\_json\\_\\_51@%'",
      );
      return rows.map((row) => ({ generic: Number(row.generic_plans), custom: Number(row.custom_plans) }));
    });
    expect(plans).toHaveLength(1);
    // PostgreSQL tries five custom plans first, then keeps the generic one when it costs no more.
    expect(plans[0]?.generic).toBeGreaterThanOrEqual(3);
    expect(plans[0]?.custom).toBeLessThanOrEqual(5);
    expect((await service.listDocuments(org.id, { limit: 2 })).map((row) => row.id)).toHaveLength(3);
  });
});
