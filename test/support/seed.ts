import type { Knex } from 'knex';
import pino from 'pino';
import type { SeedReport, SeedStep } from '../../src/seed/demo-seed';
import { buildServices, type Services } from '../../src/services';
import { testConfig } from './app';
import { testKnex } from './database';

/**
 * Runs demo seed steps, then `check`, in one transaction that is always rolled back: the run's
 * database keeps no demo rows, so the demo names never leak into other tests.
 */
export async function inRolledBackSeed(steps: SeedStep[], check: (trx: Knex.Transaction, services: Services, report: SeedReport) => Promise<void>): Promise<void> {
  const knex = testKnex();
  const services = buildServices({ config: testConfig(), knex, logger: pino({ level: 'silent' }) });
  const trx = await knex.transaction();
  try {
    const report: SeedReport = {};
    for (const step of steps) await step(trx, services, report);
    await check(trx, services, report);
  } finally {
    await trx.rollback();
    await services.shutdown();
  }
}
