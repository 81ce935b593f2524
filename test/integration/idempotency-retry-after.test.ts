import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConflictError } from '../../src/errors';
import { IdempotencyService, requestHash } from '../../src/modules/idempotency';
import { testKnex } from '../support/database';
import { createUser } from '../support/factories';

const knex = testKnex();
const service = new IdempotencyService(knex, { ttlHours: 24, leaseSeconds: 60 });

/** The in_progress claim a request leaves behind when it dies `ageSeconds` after claiming (lease 60 s). */
async function abandonedClaim(userId: string, key: string, request: unknown, ageSeconds: number): Promise<void> {
  await knex('idempotency_keys').insert({
    user_id: userId,
    operation: 'createTransfer',
    key,
    request_hash: requestHash(request),
    status: 'in_progress',
    claim_token: crypto.randomUUID(),
    created_at: knex.raw(`now() - make_interval(secs => ?)`, [ageSeconds]),
    locked_until: knex.raw(`now() + make_interval(secs => ?)`, [60 - ageSeconds]),
    expires_at: knex.raw(`now() + interval '24 hours'`),
  });
}

async function conflictOf(promise: Promise<unknown>): Promise<ConflictError> {
  try {
    await promise;
  } catch (error) {
    return error as ConflictError;
  }
  throw new Error('expected a conflict');
}

const neverRuns = async () => {
  throw new Error('the effect must not run while the claim is held');
};

describe('Retry-After of a held idempotency claim', () => {
  it('says when an abandoned claim can be taken over', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const request = { body: { amount: 5 } };
    await abandonedClaim(user.id, key, request, 20);
    const conflict = await conflictOf(service.execute({ userId: user.id, operation: 'createTransfer', key, request }, neverRuns));
    expect(conflict).toMatchObject({ code: 'ConcurrentOperation' });
    const retryAfter = Number(conflict.headers?.['Retry-After']);
    // 40 s of lease are left (give or take the clocks and this test's own time).
    expect(retryAfter).toBeGreaterThanOrEqual(37);
    expect(retryAfter).toBeLessThanOrEqual(41);
  });

  it('keeps a short Retry-After for a claim taken a moment ago (most likely still running)', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const request = { body: { amount: 5 } };
    await abandonedClaim(user.id, key, request, 0);
    const conflict = await conflictOf(service.execute({ userId: user.id, operation: 'createTransfer', key, request }, neverRuns));
    expect(conflict.headers?.['Retry-After']).toBe('1');
  });
});
