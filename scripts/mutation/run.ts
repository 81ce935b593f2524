/**
 * `make mutation`: makes one scratch database ready (a new database on DATABASE_URL's server,
 * or an in-memory embedded server), migrated once, then runs Stryker on it (the tests run
 * once per mutant; without this each run would create and migrate its own database), removes
 * the database and prints the scores (scripts/mutation/score.mjs). Arguments go to Stryker.
 */
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import knexFactory from 'knex';
import { createKnex, migrateLatest } from '../../src/db/database';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';

async function main(): Promise<number> {
  const serverUrl = process.env.DATABASE_URL;
  let url: string;
  let kind: 'postgres' | 'embedded';
  let remove: () => Promise<void>;
  if (serverUrl) {
    const name = `test_mutation_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
    const admin = knexFactory({ client: 'pg', connection: serverUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`CREATE DATABASE ${name}`);
    const target = new URL(serverUrl);
    target.pathname = `/${name}`;
    url = target.toString();
    kind = 'postgres';
    remove = async () => {
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.destroy();
    };
  } else {
    const embedded = await startEmbeddedPostgres('memory://');
    url = embedded.url;
    kind = 'embedded';
    remove = () => embedded.stop();
  }
  try {
    const knex = createKnex(url, kind, 1);
    await migrateLatest(knex).finally(() => knex.destroy());
    const stryker = spawn('npx', ['--no-install', 'stryker', 'run', ...process.argv.slice(2)], {
      stdio: 'inherit',
      env: { ...process.env, TEST_DATABASE_URL: url, TEST_DATABASE_KIND: kind },
    });
    // Stopped (Ctrl-C, kill): stop Stryker too, then still remove the database.
    const stop = () => stryker.kill('SIGTERM');
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    const status = await new Promise<number>((resolve) => stryker.on('close', (code) => resolve(code ?? 1)));
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    if (status !== 0) return status;
  } finally {
    await remove();
  }
  return spawnSync('node', ['scripts/mutation/score.mjs'], { stdio: 'inherit' }).status ?? 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  },
);
