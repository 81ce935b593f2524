/**
 * `make mutation`: makes one scratch database ready (a new database on DATABASE_URL's server,
 * or an in-memory embedded server), migrated once, then runs Stryker on it (the tests run
 * once per mutant; without this each run would create and migrate its own database), removes
 * the database and prints the scores (scripts/mutation/score.mjs). Arguments go to Stryker.
 * On DATABASE_URL's server that database is the template each test file clones into a
 * database of its own (test/support/database.ts): nothing connects to it, and the clones a
 * stopped run left behind are removed with it.
 *
 * Each run also keeps a copy of its JSON report under test-artifacts/mutation/reports/, named
 * after what it mutated (`--mutate src/modules/ledger/money.ts` -> `money.json`, the whole
 * core -> `core.json`), so that runs file by file add up: `make mutation-score` combines the
 * kept reports (for each mutated file, the newest report that has it) into one score.
 */
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
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
      const { rows } = (await admin.raw(`SELECT datname FROM pg_database WHERE starts_with(datname, ?)`, [`${name}_`])) as { rows: Array<{ datname: string }> };
      for (const { datname } of rows) await admin.raw(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
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
  const kept = keepReport(process.argv.slice(2));
  return spawnSync('node', ['scripts/mutation/score.mjs', kept], { stdio: 'inherit' }).status ?? 1;
}

/** Copies Stryker's report to test-artifacts/mutation/reports/<what was mutated>.json; returns the copy's path. */
function keepReport(args: string[]): string {
  const report = 'test-artifacts/mutation/mutation.json';
  const at = args.indexOf('--mutate');
  const mutated = at >= 0 ? (args[at + 1] ?? '') : '';
  const name = mutated
    ? mutated
        .split(',')
        .map((file) => path.basename(file.replace(/:[\d:-]+$/, ''), '.ts').replace(/[^A-Za-z0-9_-]+/g, '_'))
        .join('+')
    : 'core';
  const kept = path.join('test-artifacts/mutation/reports', `${name}.json`);
  fs.mkdirSync(path.dirname(kept), { recursive: true });
  fs.copyFileSync(report, kept);
  return kept;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  },
);
