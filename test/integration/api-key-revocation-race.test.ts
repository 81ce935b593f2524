import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction, withTransactionGuard } from '../../src/db/transaction';
import { buildTestApp, type App } from '../support/app';
import { createApiKey } from '../support/api-keys';
import { databaseKind, testKnex } from '../support/database';
import { accessTokenFor, businessPath, createOrganization } from '../support/factories';
import { until } from '../support/jobs';

/**
 * A write made with an API key checks the key inside its own transaction, just before COMMIT,
 * with the key's row read FOR SHARE: a revocation (which locks the row FOR UPDATE) either waits
 * for the write to commit, or has committed first and the write is rolled back with 401. So
 * nothing is created with a key once its revocation has committed, even by a request that was
 * authenticated before it.
 */
let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

async function customersNamed(orgId: string, name: string): Promise<number> {
  const rows = (await testKnex()('customers').where({ organization_id: orgId, name }).count({ n: '*' })) as { n: string | number }[];
  return Number(rows[0]?.n);
}

/** Whether a request waits on a lock of the api_keys rows (recording the key's use, or its transaction's check of the key). */
async function waitingOnTheKey(): Promise<boolean> {
  const rows = (await testKnex().raw(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%api_keys%'`)) as { rows: { n: number }[] };
  return (rows.rows[0]?.n ?? 0) > 0;
}

/** A revocation under way: the key's row locked and marked revoked, not committed yet. */
async function revocationUnderWay(key: { id: string; creator: { id: string } }) {
  const revocation = await testKnex().transaction();
  await revocation('api_keys').where({ id: key.id }).forUpdate().first('id');
  await revocation('api_keys').where({ id: key.id }).update({ revoked_at: revocation.fn.now(), revoked_by: key.creator.id });
  return revocation;
}

describe.runIf(databaseKind() === 'postgres')('a write racing the revocation of its key (PostgreSQL)', () => {
  it('a write authenticated before the revocation committed waits for it, then answers 401 and creates nothing', { timeout: 60_000 }, async () => {
    const org = await createOrganization();
    const key = await createApiKey(app, org, ['invoices:write']);
    const revocation = await revocationUnderWay(key);
    try {
      const name = `Racer ${crypto.randomUUID().slice(0, 8)}`;
      let settled = false;
      const write = request(app).post(`${businessPath(org.id)}/customers`).set(key.auth).send({ name }).then((res) => {
        settled = true;
        return res;
      });
      // The request read the key before the revocation committed, and now waits on the key's row
      // (recording the key's use, or its transaction's check of the key).
      await until(async () => settled || (await waitingOnTheKey()), 30_000);
      await revocation.commit();
      const res = await write;
      expect({ status: res.status, error: res.body.error, message: res.body.message }).toEqual({ status: 401, error: 'Unauthorized', message: 'The API key is revoked.' });
      expect(await customersNamed(org.id, name)).toBe(0);
    } finally {
      if (!revocation.isCompleted()) await revocation.rollback();
    }
  });

  it('a write the role rules do not call one (PATCH network-status) is held to the same check: 401, and the status is unchanged', { timeout: 60_000 }, async () => {
    const org = await createOrganization();
    const key = await createApiKey(app, org, ['network_status:write']);
    const revocation = await revocationUnderWay(key);
    try {
      let settled = false;
      const write = request(app).patch(`${businessPath(org.id)}/network-status`).set(key.auth).send({ is_open: true, version: 0 }).then((res) => {
        settled = true;
        return res;
      });
      await until(async () => settled || (await waitingOnTheKey()), 30_000);
      await revocation.commit();
      const res = await write;
      expect({ status: res.status, error: res.body.error, message: res.body.message }).toEqual({ status: 401, error: 'Unauthorized', message: 'The API key is revoked.' });
      const changes = (await testKnex()('network_status_changes').where({ organization_id: org.id }).count({ n: '*' })) as { n: string | number }[];
      expect(Number(changes[0]?.n)).toBe(0);
    } finally {
      if (!revocation.isCompleted()) await revocation.rollback();
    }
  });

  it('writes racing a revocation through the API: each one answered 201 exists, each one refused does not, and none is created once the revocation is answered', { timeout: 60_000 }, async () => {
    const org = await createOrganization();
    const key = await createApiKey(app, org, ['invoices:write']);
    const ownerToken = await accessTokenFor(app, key.creator);
    const names = Array.from({ length: 40 }, (_, i) => `Burst ${i} ${crypto.randomUUID().slice(0, 6)}`);
    let revokedAnswered = false;
    const afterRevocation: string[] = [];
    const writes = names.map(async (name, i) => {
      if (i >= 20) await until(() => revokedAnswered, 30_000);
      const sentAfter = revokedAnswered;
      const res = await request(app).post(`${businessPath(org.id)}/customers`).set(key.auth).send({ name });
      if (sentAfter) afterRevocation.push(`${res.status}`);
      return { name, status: res.status };
    });
    const revoked = await request(app).delete(`${businessPath(org.id)}/api-keys/${key.id}`).set({ Authorization: `Bearer ${ownerToken}` });
    expect(revoked.status).toBe(200);
    revokedAnswered = true;
    const results = await Promise.all(writes);
    for (const result of results) expect({ name: result.name, rows: await customersNamed(org.id, result.name) }).toEqual({ name: result.name, rows: result.status === 201 ? 1 : 0 });
    expect(results.every((r) => r.status === 201 || r.status === 401)).toBe(true);
    expect(afterRevocation.length).toBe(20);
    expect(afterRevocation.every((status) => status === '401')).toBe(true);
  });
});

describe('the transaction guard of a write made with a key (both back-ends)', () => {
  it('a transaction of a revoked key is rolled back with 401; of a live key it commits; a read-only one is not checked', async () => {
    const org = await createOrganization();
    const key = await createApiKey(app, org, ['invoices:write']);
    const knex = testKnex();
    const insert = (name: string) => withTransactionGuard(app.services.apiKeys.guard(key.id), () => withTransaction(knex, (trx) => trx('customers').insert({ organization_id: org.id, name })));
    await insert('Before the revocation');
    expect(await customersNamed(org.id, 'Before the revocation')).toBe(1);
    await knex('api_keys').where({ id: key.id }).update({ revoked_at: knex.fn.now(), revoked_by: key.creator.id });
    await expect(insert('After the revocation')).rejects.toMatchObject({ name: 'Unauthorized', message: 'The API key is revoked.' });
    expect(await customersNamed(org.id, 'After the revocation')).toBe(0);
    const read = await withTransactionGuard(app.services.apiKeys.guard(key.id), () =>
      withTransaction(knex, async (trx) => Number(((await trx('customers').where({ organization_id: org.id }).count({ n: '*' })) as { n: string }[])[0]?.n), { readOnly: true }),
    );
    expect(read).toBe(1);
  });

  it('an expired key is refused the same way', async () => {
    const org = await createOrganization();
    const key = await createApiKey(app, org, ['invoices:write']);
    const knex = testKnex();
    await knex.raw(`UPDATE api_keys SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second' WHERE id = ?`, [key.id]);
    const name = `Expired ${crypto.randomUUID().slice(0, 6)}`;
    await expect(withTransactionGuard(app.services.apiKeys.guard(key.id), () => withTransaction(knex, (trx) => trx('customers').insert({ organization_id: org.id, name })))).rejects.toMatchObject({
      name: 'Unauthorized',
      message: 'The API key has expired.',
    });
    expect(await customersNamed(org.id, name)).toBe(0);
  });
});
