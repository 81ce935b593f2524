import { ValidationError, type FieldIssue } from '../../errors';
import { checkIban } from '../../iban';
import { ACCOUNT_STATUSES, HOLDER_TYPES, type CreateOrgAccountInput, type OrgAccount } from './account-types';

/** The fields of a new account a caller chooses, trimmed and normalised. */
export type ValidAccountFields = Pick<OrgAccount, 'status' | 'holderType' | 'label' | 'bankName' | 'accountNumber' | 'iban'>;

function normaliseText(value: string | null | undefined, field: string, max: number, issues: FieldIssue[], required: boolean): string | null {
  if (value == null || value.trim() === '') {
    if (required) issues.push({ field, message: `${field} is required.` });
    return null;
  }
  const text = value.trim();
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1F\x7F]/.test(text)) issues.push({ field, message: `${field} must not contain control characters.` });
  if (text.length > max) issues.push({ field, message: `${field} is at most ${max} characters.` });
  return text;
}

/** Checks every field of a new account at once: 400 ValidationError listing each bad one. */
export function validateNewAccount(input: CreateOrgAccountInput): ValidAccountFields {
  const issues: FieldIssue[] = [];
  const status = input.status ?? 'active';
  if (!ACCOUNT_STATUSES.includes(status)) issues.push({ field: 'status', message: `status is one of ${ACCOUNT_STATUSES.join(', ')}.` });
  const holderType = input.holderType ?? 'business';
  if (!HOLDER_TYPES.includes(holderType)) issues.push({ field: 'holder_type', message: `holder_type is one of ${HOLDER_TYPES.join(', ')}.` });
  const label = normaliseText(input.label, 'label', 100, issues, true) as string;
  const bankName = normaliseText(input.bankName, 'bank_name', 140, issues, false);
  let accountNumber: string | null = null;
  if (input.accountNumber != null && input.accountNumber.trim() !== '') {
    accountNumber = input.accountNumber.replace(/[\s-]+/g, '').toUpperCase();
    if (!/^[0-9A-Z]{4,34}$/.test(accountNumber)) {
      issues.push({ field: 'account_number', message: 'account_number is 4 to 34 letters or digits.' });
    }
  }
  let iban: string | null = null;
  if (input.iban != null && input.iban.trim() !== '') {
    const check = checkIban(input.iban);
    if (check.valid) iban = check.iban;
    else issues.push({ field: 'iban', message: `iban is not a valid IBAN: ${check.reason}.` });
  }
  if (issues.length) throw new ValidationError(issues[0]?.message ?? 'Invalid account.', issues);
  return { status, holderType, label, bankName, accountNumber, iban };
}
