import type { Knex } from 'knex';
import type { IdempotentResource } from '../../src/contract';
import { requestHash, type IdempotencyService } from '../../src/modules/idempotency';

/**
 * What the HTTP pipeline hands POST /transfers (its key is claimed in the database): the key,
 * scoped to the operation, with the hash of the request body, as src/http/mount-operations.ts
 * computes it.
 */
export function transferClaim(key: string, body: unknown) {
  return { operation: 'createTransfer' as const, key, requestHash: requestHash({ body }) };
}

/**
 * Runs a service call as the pipeline runs an operation that declares an Idempotency-Key: the
 * key claimed for (user, operation), the effect in the transaction the key completes in.
 */
export function withIdempotencyKey<T extends { id: string; status: string }>(
  idempotency: IdempotencyService,
  scope: { userId: string; operation: string; key: string; request: unknown },
  resourceType: string,
  effect: (trx: Knex.Transaction) => Promise<T>,
): Promise<T> {
  return idempotency.execute(
    scope,
    async (trx) => {
      const result = await effect(trx);
      const resource: IdempotentResource = { type: resourceType, id: result.id, status: result.status, location: `/api/${resourceType}s/${result.id}` };
      return { result, responseStatus: 200, responseBody: result, resource };
    },
  );
}
