import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { contractDocument, resolveRef, type Json } from '../support/contract-document';

/**
 * Every error that carries `details` has its own schema in the contract
 * (`details` spelled out, no other property), and every response that can return it
 * references a schema that reaches it by `error` (a union discriminated by `error`, or the
 * error's own schema). A generated client then reads `details.<field>` without casts.
 */
const doc = contractDocument;
const resolve = resolveRef;

/** Each error with details: its `details` keys (required ones first, then optional ones). */
const DETAILS: Record<string, { required: string[]; optional?: string[] }> = {
  InsufficientFunds: { required: ['currency', 'available', 'required'], optional: ['account_id'] },
  WalletFrozen: { required: ['party'] },
  IdempotencyKeyAlreadyProcessed: { required: ['resource_type', 'resource_id', 'status'] },
  IdempotencyKeyReused: { required: ['operation'], optional: ['resource_type', 'resource_id', 'status'] },
  InvalidStatusTransition: { required: ['kind', 'status', 'action', 'allowed_from'] },
  QuoteExpired: { required: ['expires_at'] },
  InvalidAddress: { required: ['network', 'reason'] },
  InvoiceNotCreditable: { required: ['status'] },
  ActionNotApplicable: { required: ['kind', 'action'] },
  CreditNoteExceedsRemaining: { required: ['remaining', 'requested', 'currency'] },
  NumberingExhausted: { required: ['kind', 'year'] },
  InvalidEscrowState: { required: ['status', 'action', 'allowed_actions'] },
  InvalidTontineState: { required: ['status', 'action', 'allowed_actions'] },
  NotTontineOrganizer: { required: ['action', 'role', 'allowed_actions'] },
  TontineFull: { required: ['max_members'] },
  ContributionAlreadyPaid: { required: ['cycle'] },
  CycleNotOpen: { required: ['cycle', 'open_cycle'] },
  NotEnoughMembers: { required: ['member_count'] },
  DestinationAccountInactive: { required: ['destination_account_id'] },
  PaymentLinkNotActive: { required: ['status'] },
  VersionExhausted: { required: ['max_version'] },
  InsufficientScope: { required: ['required_scope', 'granted_scopes'] },
  WebhookUrlNotAllowed: { required: ['reason'] },
  TooManyWebhookEndpoints: { required: ['max'] },
  InvalidVerificationSessionState: { required: ['status', 'action', 'allowed_actions'] },
  VerificationSessionOpen: { required: ['session_id'] },
  DocumentsMissing: { required: ['missing'] },
  AccountNotEmpty: { required: ['wallets_with_balance', 'open_escrows', 'open_tontines'] },
  InvalidVerificationCode: { required: ['attempts_left'] },
  WeakPassword: { required: ['reason'] },
  LimitExceeded: { required: ['limit', 'currency', 'limit_minor', 'remaining_minor', 'tier', 'next_tier'] },
  RefundExceedsPayment: { required: ['amount_minor', 'refundable_minor'] },
  PaymentNotRefundable: { required: ['status'] },
  AccountFrozen: { required: ['account_id'] },
  VerificationRequired: { required: ['required_tier', 'tier'] },
  QuoteAlreadyUsed: { required: ['conversion_id'] },
  InvalidPayoutState: { required: ['status', 'action', 'allowed_from'] },
  WithdrawalAddressNotActive: { required: ['active_at'] },
  TravelRuleInformationRequired: { required: ['threshold_usd', 'required'] },
  WithdrawalNotCancelable: { required: ['status', 'allowed_from'] },
  WithdrawalAlreadyFinal: { required: ['status'] },
  AccountNotActive: { required: ['account_id', 'status'] },
};

/**
 * Errors with details that never reach a client. (The ledger's `AccountFrozen` is turned into
 * `WalletFrozen` by every caller that moves a person's wallet; a refund out of a frozen
 * organisation account answers it as it is.)
 */
const INTERNAL = new Set<string>([]);

/** Where each error can come from: operationId -> status -> errors with details. */
const RETURNED_BY: Record<string, Record<string, string[]>> = {
  createTransfer: { '409': ['IdempotencyKeyAlreadyProcessed', 'LimitExceeded'], '422': ['InsufficientFunds', 'WalletFrozen', 'IdempotencyKeyReused'] },
  createEscrow: { '409': ['IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  createTopUp: { '409': ['IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  createPaymentRefund: { '409': ['RefundExceedsPayment', 'InsufficientFunds', 'PaymentNotRefundable', 'AccountFrozen', 'IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  createPayout: { '409': ['InsufficientFunds', 'LimitExceeded', 'AccountFrozen', 'IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  approvePayout: { '409': ['InvalidPayoutState', 'IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  cancelPayout: { '409': ['InvalidPayoutState', 'IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  fundEscrow: { '409': ['InvalidEscrowState', 'IdempotencyKeyAlreadyProcessed', 'LimitExceeded'], '422': ['InsufficientFunds', 'WalletFrozen', 'IdempotencyKeyReused'] },
  acceptEscrow: { '409': ['InvalidEscrowState', 'IdempotencyKeyAlreadyProcessed'], '422': ['WalletFrozen', 'IdempotencyKeyReused'] },
  refundEscrow: { '409': ['InvalidEscrowState', 'IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  resolveEscrow: { '409': ['InvalidEscrowState', 'IdempotencyKeyAlreadyProcessed'], '422': ['WalletFrozen', 'IdempotencyKeyReused'] },
  deliverEscrow: { '409': ['InvalidEscrowState'] },
  disputeEscrow: { '409': ['InvalidEscrowState'] },
  cancelEscrow: { '409': ['InvalidEscrowState'] },
  inviteToTontine: { '403': ['NotTontineOrganizer'], '409': ['InvalidTontineState', 'TontineFull'] },
  joinTontine: { '409': ['InvalidTontineState', 'TontineFull'] },
  leaveTontine: { '409': ['InvalidTontineState'] },
  startTontine: { '403': ['NotTontineOrganizer'], '409': ['InvalidTontineState'], '422': ['NotEnoughMembers'] },
  cancelTontine: { '403': ['NotTontineOrganizer'], '409': ['InvalidTontineState'] },
  dissolveTontine: { '409': ['InvalidTontineState'] },
  contributeToTontine: {
    '409': ['ContributionAlreadyPaid', 'CycleNotOpen', 'InvalidTontineState', 'IdempotencyKeyAlreadyProcessed', 'LimitExceeded'],
    '422': ['InsufficientFunds', 'WalletFrozen', 'IdempotencyKeyReused'],
  },
  createInvoice: { '409': ['IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  finalizeInvoice: { '409': ['InvalidStatusTransition'], '422': ['ActionNotApplicable', 'NumberingExhausted'] },
  payInvoice: { '409': ['InvalidStatusTransition'], '422': ['ActionNotApplicable'] },
  markInvoiceUncollectible: { '409': ['InvalidStatusTransition'], '422': ['ActionNotApplicable'] },
  voidInvoice: { '409': ['InvalidStatusTransition'], '422': ['ActionNotApplicable'] },
  acceptQuote: { '409': ['InvalidStatusTransition', 'QuoteExpired'], '422': ['ActionNotApplicable'] },
  cancelQuote: { '409': ['InvalidStatusTransition'], '422': ['ActionNotApplicable'] },
  createCreditNote: {
    '409': ['InvoiceNotCreditable', 'IdempotencyKeyAlreadyProcessed'],
    '422': ['ActionNotApplicable', 'CreditNoteExceedsRemaining', 'NumberingExhausted', 'IdempotencyKeyReused'],
  },
  createPaymentLink: { '409': ['DestinationAccountInactive'] },
  getOrCreateCheckout: { '409': ['DestinationAccountInactive'] },
  deactivatePaymentLink: { '409': ['PaymentLinkNotActive'] },
  createSignedPaymentLink: { '409': ['PaymentLinkNotActive'] },
  updateNetworkStatus: { '422': ['VersionExhausted'] },
  createWebhookEndpoint: { '422': ['WebhookUrlNotAllowed', 'TooManyWebhookEndpoints'] },
  updateWebhookEndpoint: { '422': ['WebhookUrlNotAllowed'] },
  createVerificationSession: { '409': ['VerificationSessionOpen', 'IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  submitVerificationSession: { '409': ['InvalidVerificationSessionState', 'IdempotencyKeyAlreadyProcessed'], '422': ['DocumentsMissing', 'IdempotencyKeyReused'] },
  uploadVerificationDocument: { '409': ['InvalidVerificationSessionState'] },
  cancelVerificationSession: { '409': ['InvalidVerificationSessionState'] },
  approveVerificationSession: { '409': ['InvalidVerificationSessionState'] },
  rejectVerificationSession: { '409': ['InvalidVerificationSessionState'] },
  closeAccount: { '409': ['AccountNotEmpty', 'IdempotencyKeyAlreadyProcessed'] },
  signUp: { '422': ['WeakPassword'] },
  verifySignUp: { '422': ['InvalidVerificationCode'] },
  confirmPasswordReset: { '422': ['InvalidVerificationCode', 'WeakPassword'] },
  changeMyPassword: { '409': ['IdempotencyKeyAlreadyProcessed'], '422': ['WeakPassword', 'IdempotencyKeyReused'] },
  createCryptoDepositAddress: { '403': ['VerificationRequired'], '409': ['IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  createCryptoQuote: { '403': ['VerificationRequired'], '409': ['IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  createCryptoWithdrawalAddress: { '403': ['VerificationRequired'], '409': ['IdempotencyKeyAlreadyProcessed'], '422': ['InvalidAddress', 'IdempotencyKeyReused'] },
  createCryptoConversion: { '403': ['VerificationRequired'], '409': ['QuoteExpired', 'QuoteAlreadyUsed', 'IdempotencyKeyAlreadyProcessed'], '422': ['InsufficientFunds', 'IdempotencyKeyReused'] },
  createCryptoWithdrawal: {
    '403': ['VerificationRequired'],
    '409': ['WithdrawalAddressNotActive', 'LimitExceeded', 'IdempotencyKeyAlreadyProcessed'],
    '422': ['TravelRuleInformationRequired', 'InsufficientFunds', 'IdempotencyKeyReused'],
  },
  cancelCryptoWithdrawal: { '403': ['VerificationRequired'], '409': ['WithdrawalNotCancelable', 'IdempotencyKeyAlreadyProcessed'], '422': ['IdempotencyKeyReused'] },
  failCryptoWithdrawal: { '409': ['WithdrawalAlreadyFinal'] },
  createOrganizationCryptoQuote: { '409': ['AccountNotActive', 'IdempotencyKeyAlreadyProcessed'] },
  createOrganizationCryptoConversion: {
    '409': ['QuoteExpired', 'QuoteAlreadyUsed', 'LimitExceeded', 'AccountFrozen', 'AccountNotActive', 'IdempotencyKeyAlreadyProcessed'],
    '422': ['InsufficientFunds', 'IdempotencyKeyReused'],
  },
};
// Every operation an API key may call (its `x-access` names a scope) answers 403 InsufficientScope.
for (const item of Object.values(doc.paths as Record<string, Json>)) {
  for (const op of Object.values(item)) {
    const operation = op as { operationId?: string; 'x-access'?: { scope?: string } };
    if (operation?.operationId && operation['x-access']?.scope) {
      const statuses = (RETURNED_BY[operation.operationId] ??= {});
      statuses['403'] = [...(statuses['403'] ?? []), 'InsufficientScope'];
    }
  }
}

function operations(): Array<{ id: string; responses: Record<string, unknown> }> {
  const found: Array<{ id: string; responses: Record<string, unknown> }> = [];
  for (const item of Object.values(doc.paths as Record<string, Json>)) {
    for (const op of Object.values(item)) {
      const operation = op as { operationId?: string; responses?: Record<string, unknown> };
      if (operation?.operationId && operation.responses) found.push({ id: operation.operationId, responses: operation.responses });
    }
  }
  return found;
}

function jsonContent(response: unknown): Json | undefined {
  return (resolve(response).content as Record<string, Json> | undefined)?.['application/json'];
}

/** The error names a schema reaches by its `error` const or enum. */
function errorNames(schema: Json): string[] {
  const error = resolve((schema.properties as Json | undefined)?.error);
  if (!error) return [];
  if (typeof error.const === 'string') return [error.const];
  return Array.isArray(error.enum) ? (error.enum as string[]) : [];
}

/** The branch of a response schema for `errorName`, or undefined when the schema has none. */
function branchFor(schema: Json, errorName: string): Json | undefined {
  const options = Array.isArray(schema.oneOf) ? (schema.oneOf as unknown[]).map(resolve) : [schema];
  const matching = options.filter((option) => errorNames(option).includes(errorName));
  return matching.length === 1 ? matching[0] : undefined;
}

/** Every `DomainError` code that src/ throws with a details object literal. */
function codesThrownWithDetails(): Set<string> {
  const codes = new Set<string>();
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
  for (const file of walk(path.resolve(__dirname, '../../src'))) {
    const text = fs.readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:super|new \w*Error)\(\s*'([A-Z][A-Za-z]+)',/g)) {
      // The call's text up to its closing parenthesis (strings and templates skipped).
      let depth = 0;
      let end = match.index + match[0].indexOf('(');
      let quote: string | null = null;
      for (; end < text.length; end++) {
        const c = text[end];
        if (quote) {
          if (c === '\\') end++;
          else if (c === quote) quote = null;
          continue;
        }
        if (c === "'" || c === '"' || c === '`') quote = c;
        else if (c === '(') depth++;
        else if (c === ')' && --depth === 0) break;
      }
      const call = text.slice(match.index, end).replace(/(['"`])(?:\\.|(?!\1)[^\\])*\1/g, "''");
      if (/[,(]\s*\{\s*[a-z_]+[\s:,}]/.test(call)) codes.add(match[1] as string);
    }
  }
  return codes;
}

describe('typed error details in the contract', () => {
  it('src/ throws no error with details that the catalogue misses', () => {
    const thrown = codesThrownWithDetails();
    // The scan itself works: it sees errors of several modules.
    expect([...thrown]).toEqual(expect.arrayContaining(['InsufficientFunds', 'InvalidStatusTransition', 'VersionExhausted', 'TontineFull', 'PaymentLinkNotActive']));
    const missing = [...thrown].filter((code) => !DETAILS[code] && !INTERNAL.has(code));
    expect(missing).toEqual([]);
  });

  /**
   * An error with a second schema of the same shape: IdempotencyKeyAlreadyProcessed of the
   * operations whose key names any kind of resource (`resource_type` a pattern, not the money
   * movements' enum, which the breaking-change gate keeps closed for the operations that had it).
   */
  const SECOND_SCHEMA: Record<string, string[]> = { IdempotencyKeyAlreadyProcessed: ['ResourceAlreadyProcessedError'] };

  for (const [errorName, keys] of Object.entries(DETAILS)) {
    it(`${errorName}: its own schema spells out details (${keys.required.join(', ')})`, () => {
      const schemas = Object.entries(doc.components ? ((doc.components as Json).schemas as Json) : {}).map(([name, s]) => ({ name, schema: s as Json }));
      const own = schemas.filter(({ schema }) => schema.type === 'object' && errorNames(schema).length === 1 && errorNames(schema)[0] === errorName);
      expect(own.map((s) => s.name).sort()).toEqual([`${errorName}Error`, ...(SECOND_SCHEMA[errorName] ?? [])].sort());
      for (const { schema } of own) {
        const details = resolve((schema.properties as Json).details);
        expect(details.type).toBe('object');
        expect(details.additionalProperties).toBe(false);
        expect([...((details.required as string[]) ?? [])].sort()).toEqual([...keys.required].sort());
        expect(Object.keys(details.properties as Json).sort()).toEqual([...keys.required, ...(keys.optional ?? [])].sort());
        expect((schema.required as string[]) ?? []).toContain('details');
      }
    });
  }

  const byId = new Map(operations().map((op) => [op.id, op]));
  for (const [operationId, statuses] of Object.entries(RETURNED_BY)) {
    for (const [status, errors] of Object.entries(statuses)) {
      it(`${operationId} ${status}: ${errors.join(', ')} reached by error, with typed details`, () => {
        const response = byId.get(operationId)?.responses[status];
        expect(response, `${operationId} documents ${status}`).toBeDefined();
        const schema = resolve(jsonContent(response)?.schema);
        if (errors.length > 1 || Array.isArray(schema.oneOf)) {
          const discriminator = schema.discriminator as { propertyName?: string; mapping?: Record<string, string> } | undefined;
          expect(discriminator?.propertyName).toBe('error');
          for (const errorName of errors) expect(Object.keys(discriminator?.mapping ?? {})).toContain(errorName);
        }
        for (const errorName of errors) {
          const branch = branchFor(schema, errorName);
          expect(branch, `${operationId} ${status} has a branch for ${errorName}`).toBeDefined();
          expect(resolve((branch?.properties as Json).details).additionalProperties).toBe(false);
        }
      });
    }
  }

  it('every error with details is answered in an API test, where the response is checked against its schema', () => {
    // Outside production the app validates every response against the contract
    // (config.validateResponses), so an error whose details drift from its schema fails the API
    // test that provokes it. This guards that each catalogued error has such a test.
    const apiTests = fs
      .readdirSync(path.resolve(__dirname, '../api'))
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => fs.readFileSync(path.resolve(__dirname, '../api', name), 'utf8'))
      .join('\n');
    const untested = Object.keys(DETAILS).filter((errorName) => !new RegExp(`error: '${errorName}'|'${errorName}'`).test(apiTests));
    expect(untested).toEqual([]);
  });

  it('every documented example of an error with details is reached by its response schema', () => {
    const untyped: string[] = [];
    for (const op of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        const content = jsonContent(response);
        if (!content || Number(status) < 400) continue;
        const schema = resolve(content.schema);
        for (const example of Object.values((content.examples as Json | undefined) ?? {})) {
          const value = resolve(example).value as { error?: string } | undefined;
          if (!value?.error || !DETAILS[value.error]) continue;
          if (!branchFor(schema, value.error)) untyped.push(`${op.id} ${status} ${value.error}`);
        }
      }
    }
    expect(untyped).toEqual([]);
  });
});
