import pino from 'pino';
import { loadConfig } from '../src/config';
import { migrateLatest, openDatabase } from '../src/db/database';
import { seedDemoData, seedDemoDataIfEmpty, type SeedReport } from '../src/seed/demo-seed';
import { buildServices } from '../src/services';

/** `make seed`: the local demo data. `--force` seeds even when users exist (fails on duplicates). */
async function main(): Promise<void> {
  const config = loadConfig();
  if (config.nodeEnv !== 'development') throw new Error(`demo data is seeded only in development (NODE_ENV=development), not in ${config.nodeEnv}`);
  const database = await openDatabase({ databaseUrl: config.databaseUrl, embeddedDataDir: config.embeddedDataDir });
  try {
    await migrateLatest(database.knex);
    const services = buildServices({ config, knex: database.knex, logger: pino({ level: 'warn' }) });
    const report: SeedReport = {};
    if (process.argv.includes('--force')) {
      await seedDemoData(database.knex, services, report);
      process.stdout.write('demo data seeded\n');
    } else {
      const seeded = await seedDemoDataIfEmpty(database.knex, services, report);
      process.stdout.write(seeded ? 'demo data seeded\n' : 'database not empty: nothing seeded (use --force)\n');
    }
    if (report.demoApiKey) process.stdout.write(`Demo API key of "${report.demoApiKey.organization}" (local only, shown once): ${report.demoApiKey.secret}\n`);
    await services.shutdown();
  } finally {
    await database.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`seed failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
