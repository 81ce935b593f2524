import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors';
import { SANDBOX_MAGIC, sandboxOutcome, parseIdentifier } from '../../src/modules/transfers';

describe('parseIdentifier', () => {
  it('reads e-mails, E.164 numbers and IBANs', () => {
    expect(parseIdentifier(' Alice@Example.COM ', undefined)).toEqual({ kind: 'email', value: 'alice@example.com' });
    expect(parseIdentifier('+225 07 00 00 99 99', undefined)).toEqual({ kind: 'phone', value: '+2250700009999' });
    expect(parseIdentifier('fr76 3000 6000 0112 3456 7890 189', undefined)).toEqual({ kind: 'iban', value: 'FR7630006000011234567890189' });
  });

  it('refuses identifiers that do not fit the rail asked for', () => {
    const cases: Array<[string, 'p2p' | 'bank' | 'mobile_money' | undefined]> = [
      ['alice@example.com', 'bank'],
      ['alice@example.com', 'mobile_money'],
      ['+2250700009999', 'bank'],
      ['FR7630006000011234567890189', 'p2p'],
      ['FR7630006000011234567890189', 'mobile_money'],
      ['+22501', 'mobile_money'],
      ['+15555550100', 'mobile_money'], // possible, but not a valid number
      ['hello', undefined],
      ['hello', 'bank'],
      ['not@valid', undefined],
    ];
    for (const [identifier, rail] of cases) {
      expect(() => parseIdentifier(identifier, rail), `${identifier} / ${rail}`).toThrow(ValidationError);
    }
  });
});

describe('sandbox outcomes', () => {
  it('fail exactly on the documented magic endings', () => {
    const request = (rail: 'bank' | 'mobile_money', recipient: string) => ({ transferId: 't', rail, currency: 'XOF', amountMinor: 1n, recipient });
    expect(sandboxOutcome(request('bank', 'DE40370400440532010002'), 'r')).toMatchObject({ status: 'failed', code: 'account_closed' });
    expect(sandboxOutcome(request('bank', 'DE13370400440532010003'), 'r')).toMatchObject({ status: 'failed', code: 'rejected_by_bank' });
    expect(sandboxOutcome(request('bank', 'DE89370400440532013000'), 'r')).toEqual({ status: 'completed', railReference: 'r' });
    expect(sandboxOutcome(request('mobile_money', '+2250700000002'), 'r')).toMatchObject({ status: 'failed', code: 'recipient_not_registered' });
    expect(sandboxOutcome(request('mobile_money', '+2250700000003'), 'r')).toMatchObject({ status: 'failed', code: 'rejected_by_provider' });
    expect(sandboxOutcome(request('mobile_money', '+2250700009999'), 'r').status).toBe('completed');
    expect(Object.keys(SANDBOX_MAGIC.bank)).toEqual(['0002', '0003']);
  });
});
