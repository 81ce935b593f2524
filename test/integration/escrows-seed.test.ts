import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { seedEscrows } from '../../src/seed/escrows-seed';
import { DEMO_ADMINISTRATOR_EMAIL, DEMO_PASSWORD, seedIdentity } from '../../src/seed/identity-seed';
import { seedWallets } from '../../src/seed/wallets-seed';
import { buildServices, type Services } from '../../src/services';
import { testConfig } from '../support/app';
import { testKnex } from '../support/database';

/** Runs the steps in a transaction that is always rolled back: the run's database keeps no demo rows. */
async function inRolledBackSeed(check: (trx: Knex.Transaction, services: Services) => Promise<void>): Promise<void> {
  const knex = testKnex();
  const services = buildServices({ config: testConfig(), knex, logger: pino({ level: 'silent' }) });
  const trx = await knex.transaction();
  try {
    await seedIdentity(trx, services);
    await seedWallets(trx);
    await seedEscrows(trx, services);
    await check(trx, services);
  } finally {
    await trx.rollback();
    await services.shutdown();
  }
}

describe('escrows demo seed step', () => {
  it('adds the platform administrator ops@demo.example and one escrow in every status a transaction rests in', async () => {
    await inRolledBackSeed(async (trx, services) => {
      const ops = (await trx('users').where({ email: DEMO_ADMINISTRATOR_EMAIL }).first('is_admin', 'password_hash')) as { is_admin: boolean; password_hash: string };
      expect(ops.is_admin).toBe(true);
      expect(await services.passwords.verify(ops.password_hash, DEMO_PASSWORD)).toBe(true);
      const demoUsers = trx('users').where('email', 'like', '%@demo.example').select('id');
      const escrows = (await trx('escrows').whereIn('buyer_user_id', demoUsers).select('status', 'resolution_outcome')) as Array<{ status: string; resolution_outcome: string | null }>;
      expect(new Set(escrows.map((e) => e.status))).toEqual(new Set(['awaiting_funding', 'funded', 'delivered', 'disputed', 'released', 'refunded', 'canceled']));
      expect(escrows.filter((e) => e.resolution_outcome === 'split')).toHaveLength(1);
      const events = (await trx('events').where({ subject_type: 'escrow' }).whereIn('subject_id', trx('escrows').whereIn('buyer_user_id', demoUsers).select('id')).count<{ count: string }[]>('* as count'))[0];
      expect(Number(events?.count)).toBeGreaterThanOrEqual(escrows.length * 2);
    });
  });

  it('the README lists the administrator login, and the escrows guide the demo escrows', () => {
    const readme = fs.readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');
    expect(readme.slice(readme.indexOf('## Demo logins'))).toContain(DEMO_ADMINISTRATOR_EMAIL);
    const guide = fs.readFileSync(path.resolve(__dirname, '../../docs/integrators/escrows.md'), 'utf8');
    expect(guide.slice(guide.indexOf('## Demo data'))).toContain(DEMO_ADMINISTRATOR_EMAIL);
  });
});
