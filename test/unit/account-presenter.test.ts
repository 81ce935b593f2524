import { describe, expect, it } from 'vitest';
import type { AccountKind } from '../../src/modules/ledger';
import { csvCell, csvLine, maskAccountNumber, maskIban, neutraliseFormula, statementFilename, describeCounterparty, describePosting, MAX_STATEMENT_DAYS, resolveInterval } from '../../src/modules/accounts';

const DAY = 86_400_000;

describe('masking', () => {
  it('keeps only the last 4 characters of an account number', () => {
    expect(maskAccountNumber('1234567890')).toBe('******7890');
    expect(maskAccountNumber('12345')).toBe('****5');
    expect(maskAccountNumber('1234')).toBe('****');
    expect(maskAccountNumber(null)).toBeNull();
  });

  it('keeps the country, check digits and last 4 characters of an IBAN, grouped by 4', () => {
    expect(maskIban('FR7630006000011234567890189')).toBe('FR76 **** **** **** **** ***0 189');
    expect(maskIban('GB82WEST12345698765432')).toBe('GB82 **** **** **** **54 32');
    expect(maskIban(null)).toBeNull();
  });
});

describe('CSV cells', () => {
  it('quotes every cell and doubles inner quotes (RFC 4180)', () => {
    expect(csvCell('plain')).toBe('"plain"');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('x;=1+2')).toBe('"x;=1+2"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('a\r\nb')).toBe('"a\r\nb"');
    expect(csvCell(null)).toBe('""');
  });

  it('neutralises text a spreadsheet would run as a formula, but never amounts', () => {
    for (const text of ['=1+1', '+1 555', '-cmd', '@SUM(A1)', '\tx', '\rx', '-', '+']) expect(neutraliseFormula(text)).toBe(`'${text}`);
    for (const text of ['Payment', '-1.50', '0', '12', 'x;=1+2']) expect(neutraliseFormula(text)).toBe(text);
    const line = csvLine(
      { entryId: '1', postingId: 'p', postingKind: '@k', bookedAt: 't', description: '=cmd', counterparty: null, amountMinor: -150n, runningBalanceMinor: -5n },
      2,
      'EUR',
    );
    expect(line).toBe(`"entry","1","p","'@k","t","'=cmd","","-1.50","-0.05","EUR"\r\n`);
  });

  it('names the file after the account and the interval', () => {
    expect(statementFilename('abc', new Date('2026-10-01T00:00:00Z'), new Date('2026-11-01T12:30:00.250Z'))).toBe('statement-abc-20261001T000000Z-20261101T123000Z.csv');
  });
});

describe('statement lines', () => {
  it('describes a posting by its own description, else its kind and business reference', () => {
    const posting = (postingKind: string, description: string | null, reference: string | null) => ({ postingKind, description, reference });
    expect(describePosting(posting('payment.received', null, 'ORDER-1'))).toBe('Payment received - ORDER-1');
    expect(describePosting(posting('payment_link.payment', null, 'ORDER-5001'))).toBe('Payment received - ORDER-5001');
    expect(describePosting(posting('payment_link.payment', null, null))).toBe('Payment received');
    expect(describePosting(posting('payout.bank', '  Salary\u0000 run ', 'x'))).toBe('Salary run');
    expect(describePosting(posting('x', 'a'.repeat(500), null))).toHaveLength(200);
  });

  it('names the counterparty without personal data', () => {
    const noNames = { organizationName: null, accountLabel: null };
    const platform = (kind: AccountKind, externalRef: string | null = null, counterpartyText: string | null = null) => ({
      counterpartyText,
      counterparty: { ledgerAccountId: 'la', kind, ownerType: 'platform' as const, ownerId: null, externalRef },
    });
    const orgAccount = (ownerId: string) => ({
      counterpartyText: null,
      counterparty: { ledgerAccountId: 'la', kind: 'org_account' as const, ownerType: 'organization' as const, ownerId, externalRef: 'acc' },
    });
    expect(describeCounterparty(platform('external_clearing'), noNames, 'org')).toBe('External payment network');
    expect(describeCounterparty(platform('wallet'), noNames, 'org')).toBe('Platform wallet');
    expect(describeCounterparty(orgAccount('org'), { organizationName: 'Us', accountLabel: 'EUR' }, 'org')).toBe('EUR');
    expect(describeCounterparty(orgAccount('other'), { organizationName: 'Them SA', accountLabel: 'Secret' }, 'org')).toBe('Them SA');
    expect(describeCounterparty(orgAccount('other'), noNames, 'org')).toBe('Organisation account');
    expect(describeCounterparty(platform('rail_transit', 'mtn'), noNames, 'org')).toBe('Payout rail (mtn)');
    expect(describeCounterparty(platform('wallet', null, 'Card customer'), noNames, 'org')).toBe('Card customer');
    expect(describeCounterparty({ counterpartyText: null, counterparty: null }, noNames, 'org')).toBeNull();
  });
});

describe('statement interval', () => {
  const now = new Date('2026-11-22T12:00:00Z');

  it('defaults to the 30 days before now, or before `to`', () => {
    expect(resolveInterval({}, now)).toEqual({ from: new Date(now.getTime() - 30 * DAY), to: now, requestedTo: null });
    const to = new Date('2026-01-31T00:00:00Z');
    expect(resolveInterval({ to: to.toISOString() }, now)).toEqual({ from: new Date(to.getTime() - 30 * DAY), to, requestedTo: null });
  });

  it('accepts exactly 469 days and refuses one millisecond more, an empty or reversed interval and bad dates', () => {
    const to = new Date('2026-06-01T00:00:00Z');
    expect(resolveInterval({ from: new Date(to.getTime() - MAX_STATEMENT_DAYS * DAY), to }, now).from).toEqual(new Date(to.getTime() - 469 * DAY));
    for (const range of [
      { from: new Date(to.getTime() - MAX_STATEMENT_DAYS * DAY - 1), to },
      { from: to, to },
      { from: new Date(to.getTime() + 1), to },
      { from: 'not a date', to },
      { from: new Date(now.getTime() - 470 * DAY) },
    ]) {
      expect(() => resolveInterval(range, now)).toThrowError(expect.objectContaining({ code: 'ValidationError' }));
    }
  });
});
