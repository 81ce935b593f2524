/**
 * A probe, not a benchmark (`make bench` does not run it), for issue 21 item 2: what does each
 * part of one transfer cost the database? pgbench calls transfer_create (one per transaction,
 * 32 clients, a fresh key per call) on a scratch database, in alternating order
 * (A B C D, D C B A, ...), PROBE_SECONDS each:
 *   A  as migrated;
 *   B  without the foreign keys to users (transfers.sender_user_id, transfers.recipient_user_id,
 *      idempotency_keys.user_id): no KEY SHARE lock on both users' rows per transfer;
 *   C  without the session check (p_session_id NULL: no sessions JOIN users);
 *   D  without the key's advisory lock (a copy of the function with that statement removed).
 * Run on a quiet machine, long enough to beat the noise (PROBE_SECONDS=30 PROBE_ROUNDS=4):
 * `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/bench/probes/transfer-item-cost.ts`.
 * Prints each run and the median per variant.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { createScratchDatabase, fundedProbeParties, runPgbenchScript, transferCreateScript } from '../bench-support';

const PARTIES = Number(process.env.PROBE_PARTIES ?? '1024');
const SECONDS = Number(process.env.PROBE_SECONDS ?? '8');
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? '2');
const USER_FOREIGN_KEYS = [
  ['transfers', 'transfers_sender_user_id_foreign', 'FOREIGN KEY (sender_user_id) REFERENCES users(id)'],
  ['transfers', 'transfers_recipient_user_id_foreign', 'FOREIGN KEY (recipient_user_id) REFERENCES users(id)'],
  ['idempotency_keys', 'idempotency_keys_user_id_foreign', 'FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE'],
] as const;

/** transfer_create without its advisory lock, as transfer_create_probe_no_lock. */
async function createNoLockCopy(knex: Knex): Promise<void> {
  const file = fs.readFileSync(path.join(__dirname, '../../../src/modules/transfers/sql/transfer_create.sql'), 'utf8');
  const lock = / {4}IF NOT pg_try_advisory_xact_lock\(.*\n {6}RAISE EXCEPTION 'key in use' USING ERRCODE = 'TRF03';\n {4}END IF;\n/;
  if (!lock.test(file)) throw new Error('the advisory lock of transfer_create.sql is no longer where this probe looks for it');
  await knex.raw(file.replace(lock, '').replace('CREATE OR REPLACE FUNCTION transfer_create(', 'CREATE OR REPLACE FUNCTION transfer_create_probe_no_lock('));
}

async function main(): Promise<void> {
  const db = await createScratchDatabase('probe_item_cost');
  try {
    await fundedProbeParties(db.knex, PARTIES);
    await createNoLockCopy(db.knex);
    const variants: Record<string, () => Promise<{ script: string; remove(): Promise<void> }>> = {
      'A as migrated': () => transferCreateScript(db.knex),
      'B without foreign keys to users': async () => {
        for (const [table, name] of USER_FOREIGN_KEYS) await db.knex.raw(`ALTER TABLE ${table} DROP CONSTRAINT ${name}`);
        const script = await transferCreateScript(db.knex);
        return {
          script: script.script,
          async remove() {
            await script.remove();
            for (const [table, name, definition] of USER_FOREIGN_KEYS) await db.knex.raw(`ALTER TABLE ${table} ADD CONSTRAINT ${name} ${definition} NOT VALID`);
          },
        };
      },
      'C without the session check': () => transferCreateScript(db.knex, 0, { withSession: false }),
      'D without the advisory lock': () => transferCreateScript(db.knex, 0, { functionName: 'transfer_create_probe_no_lock' }),
    };
    const names = Object.keys(variants);
    const results: Array<{ variant: string; tps: number }> = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const script = await (variants[name] as () => Promise<{ script: string; remove(): Promise<void> }>)();
        try {
          results.push({ variant: name, tps: runPgbenchScript(db.url, script.script, 32, SECONDS).tps });
        } finally {
          await script.remove();
        }
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    const medians = Object.fromEntries(names.map((name) => [name, median(results.filter((r) => r.variant === name).map((r) => r.tps))]));
    process.stdout.write(`${JSON.stringify({ probe: 'transfer-item-cost', seconds_per_run: SECONDS, results, medians }, null, 2)}\n`);
  } finally {
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
