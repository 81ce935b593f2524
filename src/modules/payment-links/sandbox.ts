import { ValidationError, type FieldIssue } from '../../errors';
import type { PaymentMethod } from './payment-links-types';

/**
 * The sandbox payment methods of the public page and their magic values.
 *
 * Mobile money: any phone number in international format (`+` and 8 to 15 digits). The last
 * four digits decide the outcome:
 *   0001 -> failed `insufficient_funds`      0002 -> failed `approval_rejected`
 *   0003 -> failed `payer_not_found`         0008 -> pending for a while, then failed `expired`
 *   0009 -> pending for a while, then succeeded     anything else -> succeeded at once
 *
 * Test cards (any future expiry MM/YY, any 3 or 4 digit CVC); other card numbers are refused,
 * so a real card number is never taken by the sandbox:
 *   4242 4242 4242 4242 -> succeeded              4000 0000 0000 0002 -> failed `card_declined`
 *   4000 0000 0000 9995 -> failed `insufficient_funds`
 *   4000 0000 0000 0077 -> pending for a while, then succeeded
 */

export type SandboxOutcome = 'succeeded' | `failed:${string}`;

export interface SandboxDecision {
  outcome: SandboxOutcome;
  delayed: boolean;
}

export interface SandboxPayer {
  method: PaymentMethod;
  /** Last four digits of the phone number or card; the only payer detail stored. */
  last4: string;
  decision: SandboxDecision;
}

const MOBILE_MONEY: Record<string, SandboxDecision> = {
  '0001': { outcome: 'failed:insufficient_funds', delayed: false },
  '0002': { outcome: 'failed:approval_rejected', delayed: false },
  '0003': { outcome: 'failed:payer_not_found', delayed: false },
  '0008': { outcome: 'failed:expired', delayed: true },
  '0009': { outcome: 'succeeded', delayed: true },
};

export const TEST_CARDS: Record<string, SandboxDecision> = {
  '4242424242424242': { outcome: 'succeeded', delayed: false },
  '4000000000000002': { outcome: 'failed:card_declined', delayed: false },
  '4000000000009995': { outcome: 'failed:insufficient_funds', delayed: false },
  '4000000000000077': { outcome: 'succeeded', delayed: true },
};

export interface PayerInput {
  method?: unknown;
  phone?: unknown;
  card_number?: unknown;
  card_expiry?: unknown;
  card_cvc?: unknown;
}

function text(value: unknown, max: number): string {
  return typeof value === 'string' ? value.trim().slice(0, max) : '';
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let digit = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** Validates the payer fields of the form; throws a ValidationError naming each bad field. */
export function readSandboxPayer(input: PayerInput, now = new Date()): SandboxPayer {
  const method = text(input.method, 20);
  if (method === 'mobile_money') {
    const phone = text(input.phone, 40).replace(/[\s().-]/g, '');
    if (!/^\+[1-9][0-9]{7,14}$/.test(phone)) {
      throw ValidationError.field('phone', 'Enter the mobile money number in international format, for example +225 07 12 34 56 78.');
    }
    const last4 = phone.slice(-4);
    return { method, last4, decision: MOBILE_MONEY[last4] ?? { outcome: 'succeeded', delayed: false } };
  }
  if (method === 'card') {
    const issues: FieldIssue[] = [];
    const number = text(input.card_number, 40).replace(/[\s-]/g, '');
    const decision = TEST_CARDS[number];
    if (!/^[0-9]{12,19}$/.test(number) || !luhn(number)) issues.push({ field: 'card_number', message: 'The card number is not valid.' });
    else if (!decision) issues.push({ field: 'card_number', message: 'The sandbox takes only test cards, such as 4242 4242 4242 4242.' });
    const expiry = /^(0[1-9]|1[0-2])\s*\/\s*([0-9]{2})$/.exec(text(input.card_expiry, 10));
    if (!expiry) {
      issues.push({ field: 'card_expiry', message: 'Enter the expiry date as MM/YY.' });
    } else {
      const year = 2000 + Number(expiry[2]);
      const month = Number(expiry[1]);
      if (year < now.getUTCFullYear() || (year === now.getUTCFullYear() && month < now.getUTCMonth() + 1)) {
        issues.push({ field: 'card_expiry', message: 'The card has expired.' });
      }
    }
    if (!/^[0-9]{3,4}$/.test(text(input.card_cvc, 10))) issues.push({ field: 'card_cvc', message: 'Enter the 3 or 4 digit security code.' });
    if (issues.length) throw new ValidationError('Check the card details.', issues);
    return { method, last4: number.slice(-4), decision: decision as SandboxDecision };
  }
  throw ValidationError.field('method', 'Choose a payment method.');
}
