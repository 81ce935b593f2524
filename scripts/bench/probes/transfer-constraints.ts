/**
 * A probe, not a benchmark (`make bench` does not run it): does removing constraints make
 * `transfer_create` faster? On a scratch database it calls the function straight from pgbench
 * (32 clients, a fresh key per call) in the order A B C C B A, to spread drift over the three:
 *   A  as migrated;
 *   B  without the four foreign keys of the hot inserts (transfers -> users twice, -> postings;
 *      idempotency_keys -> users);
 *   C  B, with the CHECK constraints of transfers, idempotency_keys, ledger_accounts and postings
 *      folded into one CHECK per table.
 * Run: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/bench/probes/transfer-constraints.ts`
 * (PROBE_SECONDS per run, default 8). Measured 2026-11-23 on a quiet 2-core machine: A 614/493,
 * B 471/625, C 584/623 tps: no difference beyond run-to-run noise.
 */
import type { Knex } from 'knex';
import { createScratchDatabase, fundedProbeParties, runPgbenchScript, transferCreateScript } from '../bench-support';

const PARTIES = 256;
const SECONDS = process.env.PROBE_SECONDS ?? '8';
const FOREIGN_KEYS = [
  ['transfers', 'transfers_sender_user_id_foreign', 'FOREIGN KEY (sender_user_id) REFERENCES users(id)'],
  ['transfers', 'transfers_recipient_user_id_foreign', 'FOREIGN KEY (recipient_user_id) REFERENCES users(id)'],
  ['transfers', 'transfers_posting_id_foreign', 'FOREIGN KEY (posting_id) REFERENCES postings(id)'],
  ['idempotency_keys', 'idempotency_keys_user_id_foreign', 'FOREIGN KEY (user_id) REFERENCES users(id)'],
] as const;
const CHECKED_TABLES = ['transfers', 'idempotency_keys', 'ledger_accounts', 'postings'];

interface Check {
  table: string;
  name: string;
  definition: string;
}

async function setForeignKeys(knex: Knex, present: boolean): Promise<void> {
  for (const [table, name, definition] of FOREIGN_KEYS) {
    await knex.raw(present ? `ALTER TABLE ${table} ADD CONSTRAINT ${name} ${definition} NOT VALID` : `ALTER TABLE ${table} DROP CONSTRAINT ${name}`);
  }
}

/** Folds each table's CHECKs into one; returns what it replaced, for `unfoldChecks`. */
async function foldChecks(knex: Knex): Promise<Check[]> {
  const checks = (
    await knex.raw<{ rows: Check[] }>(
      `SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS definition
         FROM pg_constraint WHERE contype = 'c' AND conrelid::regclass::text = ANY(?)`,
      [CHECKED_TABLES],
    )
  ).rows;
  for (const table of CHECKED_TABLES) {
    const own = checks.filter((check) => check.table === table);
    for (const check of own) await knex.raw(`ALTER TABLE ${table} DROP CONSTRAINT ${check.name}`);
    const body = own.map((check) => check.definition.replace(/^CHECK /, '').replace(/ NOT VALID$/, '')).join(' AND ');
    if (body) await knex.raw(`ALTER TABLE ${table} ADD CONSTRAINT ${table}_folded CHECK (${body}) NOT VALID`);
  }
  return checks;
}

async function unfoldChecks(knex: Knex, checks: Check[]): Promise<void> {
  for (const table of CHECKED_TABLES) await knex.raw(`ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${table}_folded`);
  for (const check of checks) await knex.raw(`ALTER TABLE ${check.table} ADD CONSTRAINT ${check.name} ${check.definition.replace(/ NOT VALID$/, '')} NOT VALID`);
}

async function main(): Promise<void> {
  const db = await createScratchDatabase('probe_constraints');
  try {
    await fundedProbeParties(db.knex, PARTIES);
    const transferCreate = await transferCreateScript(db.knex);
    const results: Array<{ variant: string; tps: number }> = [];
    const run = (variant: string) => results.push({ variant, tps: runPgbenchScript(db.url, transferCreate.script, 32, Number(SECONDS)).tps });
    run('A as migrated');
    await setForeignKeys(db.knex, false);
    run('B without foreign keys');
    const checks = await foldChecks(db.knex);
    run('C B + checks folded');
    run('C B + checks folded');
    await unfoldChecks(db.knex, checks);
    run('B without foreign keys');
    await setForeignKeys(db.knex, true);
    run('A as migrated');
    await transferCreate.remove();
    process.stdout.write(`${JSON.stringify({ probe: 'transfer-constraints', seconds_per_run: Number(SECONDS), results }, null, 2)}\n`);
  } finally {
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
