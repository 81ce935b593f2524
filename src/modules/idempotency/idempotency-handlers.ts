import type { Handlers } from '../../contract';
import type { IdempotencyService } from './idempotency-service';

/** GET /idempotency-keys/{key}: the state of one of the caller's keys. */
export function idempotencyHandlers(idempotency: IdempotencyService): Handlers<'getIdempotencyKey'> {
  return {
    getIdempotencyKey: async ({ caller, path, query }) => ({ data: await idempotency.describe(caller.userId, path.key, query.operation) }),
  };
}
