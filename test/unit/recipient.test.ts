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

describe('parseIdentifier refusals, exactly', () => {
  const FIELD = 'body.recipientIdentifier';
  const E164_MESSAGE = 'recipientIdentifier must be an E.164 telephone number such as +2250700009999.';
  const NEITHER = 'recipientIdentifier must be an e-mail address, an E.164 telephone number (+2250700009999) or an IBAN.';
  const BAD_EMAIL = 'recipientIdentifier is not a valid e-mail address.';

  /** The refusal's single field issue (the error's message is the same text). */
  function refusal(identifier: string, rail?: 'p2p' | 'bank' | 'mobile_money'): { field: string; message: string } {
    try {
      parseIdentifier(identifier, rail);
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      const { details, message } = error as ValidationError;
      expect(details).toHaveLength(1);
      expect((details as Array<{ message: string }>)[0]?.message).toBe(message);
      return (details as Array<{ field: string; message: string }>)[0] as { field: string; message: string };
    }
    throw new Error(`expected ${identifier} / ${rail} to be refused`);
  }

  it('takes E.164 numbers of 7 to 15 digits after the plus, the first one not zero', () => {
    expect(parseIdentifier('+1234567', undefined)).toEqual({ kind: 'phone', value: '+1234567' });
    expect(parseIdentifier('+123456789012345', 'p2p')).toEqual({ kind: 'phone', value: '+123456789012345' });
    expect(parseIdentifier('+33 (1) 23.45-67', undefined)).toEqual({ kind: 'phone', value: '+331234567' });
    expect(refusal('+123456')).toEqual({ field: FIELD, message: E164_MESSAGE });
    expect(refusal('+1234567890123456')).toEqual({ field: FIELD, message: E164_MESSAGE });
    expect(refusal('+0123456789')).toEqual({ field: FIELD, message: E164_MESSAGE });
    expect(refusal('+')).toEqual({ field: FIELD, message: NEITHER });
  });

  it('reads a telephone number only when the whole text is one (anchored at both ends)', () => {
    expect(refusal('12+3456789')).toEqual({ field: FIELD, message: NEITHER });
    expect(refusal('+2250700009999abc')).toEqual({ field: FIELD, message: NEITHER });
    expect(refusal('tel+2250700009999')).toEqual({ field: FIELD, message: NEITHER });
  });

  it('refuses malformed or overlong e-mail addresses', () => {
    const local64 = 'a'.repeat(64);
    expect(parseIdentifier(`${local64}@example.com`, 'p2p')).toEqual({ kind: 'email', value: `${local64}@example.com` });
    expect(refusal(`${local64}a@example.com`)).toEqual({ field: FIELD, message: BAD_EMAIL });
    const domain254 = `${'d'.repeat(185)}.example.com`; // 64 + 1 + 197 = 262 characters
    expect(refusal(`${local64}@${domain254}`)).toEqual({ field: FIELD, message: BAD_EMAIL });
    const exactly254 = `${local64}@${'d'.repeat(254 - 64 - 1 - 4)}.com`;
    expect(exactly254).toHaveLength(254);
    expect(parseIdentifier(exactly254, undefined)).toEqual({ kind: 'email', value: exactly254 });
    expect(refusal(`${local64}@${'d'.repeat(254 - 64 - 4)}.com`)).toEqual({ field: FIELD, message: BAD_EMAIL });
    for (const text of ['not@valid', '@example.com', 'a@example.c', 'a b@example.com', 'a@b@example.com', 'x a@example.com', 'a@example.com x', 'a@example.com@x', 'a@example.cc\tb']) {
      expect(refusal(text), text).toEqual({ field: FIELD, message: BAD_EMAIL });
    }
  });

  it('names the rail and what it needs when the identifier does not fit it', () => {
    const mismatch = (rail: string, needs: string) => ({ field: FIELD, message: `With rail "${rail}", recipientIdentifier must be ${needs}.` });
    expect(refusal('alice@example.com', 'bank')).toEqual(mismatch('bank', 'an IBAN'));
    expect(refusal('alice@example.com', 'mobile_money')).toEqual(mismatch('mobile_money', 'an E.164 mobile-money number'));
    expect(refusal('+2250700009999', 'bank')).toEqual(mismatch('bank', 'an IBAN'));
    expect(refusal('FR7630006000011234567890189', 'p2p')).toEqual(mismatch('p2p', "a platform user's e-mail or telephone number"));
    expect(refusal('FR7630006000011234567890189', 'mobile_money')).toEqual(mismatch('mobile_money', 'an E.164 mobile-money number'));
    expect(refusal('hello', 'p2p')).toEqual(mismatch('p2p', "a platform user's e-mail or telephone number"));
    expect(refusal('hello', 'mobile_money')).toEqual(mismatch('mobile_money', 'an E.164 mobile-money number'));
    expect(refusal('hello')).toEqual({ field: FIELD, message: NEITHER });
  });

  it('checks a mobile-money number against its country, and only for that rail', () => {
    expect(refusal('+15555550100', 'mobile_money')).toEqual({ field: FIELD, message: 'recipientIdentifier is not a valid telephone number for its country.' });
    expect(parseIdentifier('+15555550100', 'p2p')).toEqual({ kind: 'phone', value: '+15555550100' });
    expect(parseIdentifier('+15555550100', undefined)).toEqual({ kind: 'phone', value: '+15555550100' });
    expect(parseIdentifier('+2250700009999', 'mobile_money')).toEqual({ kind: 'phone', value: '+2250700009999' });
  });

  it('on the bank rail reads anything as an IBAN and says what is wrong with it', () => {
    expect(refusal('hello', 'bank')).toEqual({
      field: FIELD,
      message: 'recipientIdentifier must be an IBAN: a country code, two check digits and up to 30 letters or digits.',
    });
    expect(refusal('DE89370400440532013001', 'bank')).toEqual({
      field: FIELD,
      message: 'recipientIdentifier the IBAN check digits are wrong (mod-97 checksum failed): check for a typo.',
    });
    expect(refusal('DE89370400440532013001')).toEqual({
      field: FIELD,
      message: 'recipientIdentifier the IBAN check digits are wrong (mod-97 checksum failed): check for a typo.',
    });
    expect(parseIdentifier('DE89 3704 0044 0532 0130 00', 'bank')).toEqual({ kind: 'iban', value: 'DE89370400440532013000' });
  });
});

// The e-mail pattern backtracks over every dot of its domain, so a long `a@a.a.a…` would take
// about 1.4 s at 40,000 characters. The length is checked first, so the pattern never sees
// more than 254.
describe('an identifier built to cost time', () => {
  it('is refused at once, whatever its length', () => {
    const adversarial = `a@${'a.'.repeat(20_000)}@`;
    const started = process.hrtime.bigint();
    expect(() => parseIdentifier(adversarial, undefined)).toThrow(ValidationError);
    // Generous for a loaded machine: a quadratic scan takes thousands of milliseconds.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(250);
  });
});
