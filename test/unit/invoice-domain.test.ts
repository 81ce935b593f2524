import { describe, expect, it } from 'vitest';
import { computeTotals, taxOf, LIFECYCLE, nextStatus, STATUSES_BY_KIND, amountDue, formatDocumentNumber, type DocumentKind } from '../../src/modules/invoices';

describe('invoice amounts', () => {
  it('rounds tax half up in integers', () => {
    expect(taxOf(5n, 1000)).toBe(1n); // 0.5 -> 1
    expect(taxOf(4n, 1000)).toBe(0n); // 0.4 -> 0
    expect(taxOf(100_000n, 1800)).toBe(18_000n);
    expect(taxOf(9_223_372_036_854_775n, 10_000)).toBe(9_223_372_036_854_775n);
  });

  it('adds lines in bigint minor units, never floats', () => {
    const totals = computeTotals([
      { description: 'a', quantity: 3, unit_amount: '0.1' },
      { description: 'b', quantity: 1, unit_amount: '0.2', tax_rate_bps: 1000 },
    ], 2);
    expect(totals.subtotalMinor).toBe(50n); // 0.3 + 0.2 exactly
    expect(totals.taxMinor).toBe(2n);
    expect(totals.totalMinor).toBe(52n);
  });

  it('refuses amounts finer than the currency and totals beyond a bigint', () => {
    expect(() => computeTotals([{ description: 'a', quantity: 1, unit_amount: '1.5' }], 0)).toThrow(/whole number/);
    expect(() => computeTotals([{ description: 'a', quantity: 1_000_000, unit_amount: '999999999999999999' }], 0)).toThrow(/too large/);
  });
});

describe('lifecycles', () => {
  it('every transition leads to a status of the kind', () => {
    for (const [kind, actions] of Object.entries(LIFECYCLE) as Array<[DocumentKind, (typeof LIFECYCLE)[DocumentKind]]>) {
      for (const transition of Object.values(actions)) {
        for (const from of transition?.from ?? []) expect(STATUSES_BY_KIND[kind]).toContain(from);
        expect(STATUSES_BY_KIND[kind]).toContain(transition?.to);
      }
    }
  });

  it.each([
    ['invoice', 'draft', 'finalize', 'open'],
    ['invoice', 'open', 'pay', 'paid'],
    ['invoice', 'uncollectible', 'pay', 'paid'],
    ['invoice', 'open', 'mark_uncollectible', 'uncollectible'],
    ['invoice', 'open', 'void', 'void'],
    ['invoice', 'uncollectible', 'void', 'void'],
    ['quote', 'draft', 'finalize', 'open'],
    ['quote', 'open', 'accept', 'accepted'],
    ['quote', 'open', 'cancel', 'canceled'],
    ['quote', 'draft', 'cancel', 'canceled'],
    ['credit_note', 'issued', 'void', 'void'],
  ] as const)('%s %s --%s--> %s', (kind, from, action, to) => {
    expect(nextStatus(kind, from, action)).toBe(to);
  });

  it.each([
    ['invoice', 'paid', 'void', 'InvalidStatusTransition'],
    ['invoice', 'void', 'pay', 'InvalidStatusTransition'],
    ['invoice', 'draft', 'pay', 'InvalidStatusTransition'],
    ['invoice', 'uncollectible', 'mark_uncollectible', 'InvalidStatusTransition'],
    ['quote', 'accepted', 'cancel', 'InvalidStatusTransition'],
    ['quote', 'canceled', 'accept', 'InvalidStatusTransition'],
    ['credit_note', 'void', 'void', 'InvalidStatusTransition'],
    ['invoice', 'open', 'accept', 'ActionNotApplicable'],
    ['quote', 'open', 'pay', 'ActionNotApplicable'],
    ['credit_note', 'issued', 'finalize', 'ActionNotApplicable'],
  ] as const)('%s %s --%s--> %s', (kind, from, action, code) => {
    expect(() => nextStatus(kind, from, action)).toThrow(expect.objectContaining({ code }));
  });

  it('formats numbers and amounts due', () => {
    expect(formatDocumentNumber('invoice', 2026, 42)).toBe('INV-2026-000042');
    expect(formatDocumentNumber('credit_note', 2026, 1_234_567)).toBe('CN-2026-1234567');
    expect(amountDue({ kind: 'invoice', status: 'open', totalMinor: 100n, creditedMinor: 30n })).toBe(70n);
    expect(amountDue({ kind: 'invoice', status: 'paid', totalMinor: 100n, creditedMinor: 0n })).toBe(0n);
    expect(amountDue({ kind: 'quote', status: 'open', totalMinor: 100n, creditedMinor: 0n })).toBe(0n);
  });
});
