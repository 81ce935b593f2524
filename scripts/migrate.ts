import { loadConfig } from '../src/config';
import { migrateLatest, openDatabase } from '../src/db/database';

/** `make migrate`: applies pending migrations to DATABASE_URL, or to the embedded database. */
async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase({ databaseUrl: config.databaseUrl, embeddedDataDir: config.embeddedDataDir });
  try {
    const applied = await migrateLatest(database.knex);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'already up to date\n');
  } finally {
    await database.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`migrate failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
