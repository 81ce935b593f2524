import crypto from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createKnex, migrateLatest } from '../../src/db/database';
import { seedDemoDataIfEmpty } from '../../src/seed/demo-seed';
import { buildServices } from '../../src/services';
import { testConfig } from '../support/app';
import { databaseKind } from '../support/database';

/**
 * Three instances starting together on an empty database, each with its own pool (as three
 * processes would): exactly one seeds, the others find its data, none fails. PostgreSQL only:
 * the embedded server serves one connection, so there only one instance can run.
 */
describe.runIf(databaseKind() === 'postgres')('demo seed of instances starting together', () => {
  it('seeds exactly once, and no instance fails', { timeout: 180_000 }, async () => {
    const serverUrl = process.env.DATABASE_URL as string;
    const name = `seed_race_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
    const admin = knexFactory({ client: 'pg', connection: serverUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const pools: Knex[] = [];
    try {
      const migrator = createKnex(url.toString(), 'postgres', 1);
      await migrateLatest(migrator).finally(() => migrator.destroy());
      for (let i = 0; i < 3; i += 1) pools.push(createKnex(url.toString(), 'postgres', 3));
      const config = testConfig();
      const instances = pools.map((knex) => ({ knex, services: buildServices({ config, knex, logger: pino({ level: 'silent' }) }) }));
      await Promise.all(instances.map(({ services }) => services.ready()));
      const outcomes = await Promise.allSettled(instances.map(({ knex, services }) => seedDemoDataIfEmpty(knex, services)));
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
      const seeded = outcomes.map((o) => (o as PromiseFulfilledResult<boolean>).value);
      expect(seeded.filter(Boolean)).toHaveLength(1);
      const users = await pools[0]?.('users').count<{ count: string }[]>('* as count');
      expect(Number(users?.[0]?.count)).toBeGreaterThanOrEqual(6);
      await Promise.all(instances.map(({ services }) => services.shutdown()));
    } finally {
      await Promise.all(pools.map((knex) => knex.destroy()));
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.destroy();
    }
  });
});
