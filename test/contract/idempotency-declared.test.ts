import { describe, expect, it } from 'vitest';
import { OPERATIONS, type OperationId } from '../../src/contract';
import { contractDocument, resolveRef, type Json } from '../support/contract-document';

/**
 * The one rule for integrators, read from the contract: every POST accepts an
 * `Idempotency-Key`; those that move money or create a money-bearing object require it; every
 * operation whose key the pipeline applies documents what the key can answer.
 */

/** Money moves or a money-bearing object is made: the key is required. Every other POST takes it optionally. */
const MONEY = ['createTransfer', 'createTopUp', 'createPaymentRefund', 'createPayout', 'createEscrow', 'fundEscrow', 'acceptEscrow', 'refundEscrow', 'resolveEscrow', 'contributeToTontine', 'createCryptoConversion', 'createOrganizationCryptoConversion', 'createCryptoWithdrawal'] as const satisfies readonly OperationId[];

interface Post {
  id: OperationId;
  path: string;
  operation: Json;
  key: Json | undefined;
}

function posts(): Post[] {
  const found: Post[] = [];
  for (const [path, rawItem] of Object.entries(contractDocument.paths as Json)) {
    const item = resolveRef(rawItem);
    const operation = item.post as Json | undefined;
    if (!operation) continue;
    const parameters = [...((item.parameters as unknown[]) ?? []), ...((operation.parameters as unknown[]) ?? [])].map(resolveRef);
    const key = parameters.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    found.push({ id: operation.operationId as OperationId, path, operation, key });
  }
  return found;
}

/** The error names a response's JSON schema lets through (a generic envelope lets any through). */
function errorNames(response: unknown): Set<string> | 'any' {
  const media = (resolveRef(response).content as Json | undefined)?.['application/json'] as Json | undefined;
  const schema = resolveRef(media?.schema);
  const branches = (schema.oneOf as unknown[] | undefined)?.map(resolveRef) ?? [schema];
  const names = new Set<string>();
  for (const branch of branches) {
    const error = (branch.properties as Json | undefined)?.error as Json | undefined;
    if (!error || (error.const === undefined && error.enum === undefined)) return 'any';
    for (const name of [error.const, ...((error.enum as unknown[]) ?? [])]) if (typeof name === 'string') names.add(name);
  }
  return names;
}

function documents(post: Post, status: string, error: string): boolean {
  const response = (post.operation.responses as Json)[status];
  if (!response) return false;
  const names = errorNames(response);
  return names === 'any' || names.has(error);
}

describe('Idempotency-Key in the contract: one rule for every POST', () => {
  const all = posts();

  it('finds the POST operations of the contract', () => {
    expect(all.length).toBeGreaterThanOrEqual(39);
    expect(all.map((p) => p.id)).toEqual(expect.arrayContaining([...MONEY, 'login', 'createApiKey', 'createWebhookEndpoint', 'payInvoice']));
  });

  it('every POST declares the Idempotency-Key header', () => {
    expect(all.filter((p) => !p.key).map((p) => `${p.id} (POST ${p.path})`)).toEqual([]);
  });

  it('the operations that move money or create a money-bearing object require it, and only they', () => {
    const required = all.filter((p) => p.key?.required === true).map((p) => p.id);
    expect(required.sort()).toEqual([...MONEY].sort());
  });

  it('the key has one format everywhere: 1 to 255 printable ASCII characters', () => {
    for (const post of all) {
      expect(post.key?.schema, post.id).toEqual({ type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' });
    }
  });

  it('the operation map records it as the contract declares it (what the pipeline applies)', () => {
    for (const post of all) {
      expect(OPERATIONS[post.id].idempotency, post.id).toBe(post.key?.required === true ? 'required' : 'optional');
      expect(OPERATIONS[post.id].headers, post.id).toContain('Idempotency-Key');
    }
  });

  it('every POST with a caller documents the replay (409) and the reuse (422) its key can answer', () => {
    const undocumented: string[] = [];
    for (const post of all.filter((p) => OPERATIONS[p.id].secured)) {
      for (const [status, error] of [
        ['409', 'IdempotencyKeyAlreadyProcessed'],
        ['409', 'ConcurrentOperation'],
        ['422', 'IdempotencyKeyReused'],
      ] as const) {
        if (!documents(post, status, error)) undocumented.push(`${post.id} ${status} ${error}`);
      }
    }
    expect(undocumented).toEqual([]);
  });

  it('a POST without a caller (login, refresh) says its key is never replayed, and documents no replay', () => {
    const open = all.filter((p) => !OPERATIONS[p.id].secured);
    expect(open.map((p) => p.id).sort()).toEqual(['approveTestHelperTopUp', 'confirmPasswordReset', 'declineTestHelperTopUp', 'failCryptoWithdrawal', 'login', 'mineCryptoBlocks', 'receiveMobileMoneyCallback', 'refreshSession', 'requestPasswordReset', 'signUp', 'simulateCryptoDeposit', 'verifySignUp']);
    for (const post of open) {
      expect(post.key?.description, post.id).toMatch(/never\s+replayed/);
      expect(documents(post, '409', 'IdempotencyKeyAlreadyProcessed'), post.id).toBe(false);
    }
  });

  it('the operations whose answer shows a secret once say a replay never shows it again', () => {
    for (const id of ['createApiKey', 'rollApiKey', 'createWebhookEndpoint', 'rotateWebhookEndpointSecret'] as const) {
      const post = all.find((p) => p.id === id) as Post;
      expect(post.key?.description, id).toMatch(/a replay never shows it again, and it is never stored/);
    }
  });

  it('the contract states the rule once, in its description', () => {
    const description = (contractDocument.info as Json).description as string;
    expect(description).toMatch(/every `POST` accepts an optional `Idempotency-Key`/);
  });
});
