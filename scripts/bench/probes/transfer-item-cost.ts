/**
 * A probe, not a benchmark (`make bench` does not run it): what does each
 * part of one transfer cost the database? pgbench calls transfer_create (one per transaction,
 * 32 clients, a fresh key per call) on a scratch database, in alternating order
 * (A B C D, D C B A, ...), PROBE_SECONDS each:
 *   A  as migrated;
 *   B  without the foreign keys to users (transfers.sender_user_id, transfers.recipient_user_id,
 *      idempotency_keys.user_id): no KEY SHARE lock on both users' rows per transfer;
 *   C  without the session check (p_session_id NULL: no sessions JOIN users);
 *   D  without the key's advisory lock (a copy of the function with that statement removed);
 *   E  the idempotency key as a unique column of the transfer instead of its own row (a copy of
 *      the function that writes the key into transfers.probe_key, under a unique index on
 *      (sender_user_id, probe_key), and no idempotency_keys row; its look-ups of that table
 *      stay and find nothing, so E is a lower bound of what the change saves);
 *   F  without the transfer's event (the outbox trigger `transfers_record_event`
 *      disabled): A minus F is what writing one event per transfer costs.
 * PROBE_VARIANTS=A,F runs only those (by letter).
 * By default 30 s per run and 4 rounds (A B C D E, E D C B A, ...): long enough to beat the
 * noise on a quiet machine, about 10 minutes. PROBE_SECONDS and PROBE_ROUNDS shorten it:
 * `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/bench/probes/transfer-item-cost.ts`.
 * Prints each run (tps and PostgreSQL CPU per transfer, from /proc, which a busy machine
 * inflates far less than tps) and per variant the median, the spread and the ratio to A.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { createScratchDatabase, fundedProbeParties, perUnit, postgresCpuMs, runPgbenchScript, transferCreateScript } from '../bench-support';

const PARTIES = Number(process.env.PROBE_PARTIES ?? '1024');
const SECONDS = Number(process.env.PROBE_SECONDS ?? '30');
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? '4');
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

/**
 * transfer_create with the key as a unique column of the transfer, as
 * transfer_create_probe_key_column: the completed-key row is not written, the transfer row
 * carries the key (a second request with the key fails on the unique index, as a key row would).
 */
async function createKeyColumnCopy(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transfers ADD COLUMN IF NOT EXISTS probe_key text');
  await knex.raw('CREATE UNIQUE INDEX IF NOT EXISTS transfers_probe_key ON transfers (sender_user_id, probe_key)');
  const file = fs.readFileSync(path.join(__dirname, '../../../src/modules/transfers/sql/transfer_create.sql'), 'utf8');
  const completion = / {2}IF key_found THEN\n {4}UPDATE idempotency_keys[\s\S]*? {2}END IF;\n {2}RETURN NEXT v_transfer;/;
  const insert = 'INSERT INTO transfers (id, sender_user_id, rail, status, currency, amount_minor, recipient_type, recipient_identifier, recipient_user_id, note, posting_id)\n  VALUES (v_id,';
  if (!completion.test(file) || !file.includes(insert)) throw new Error('the key completion or the transfer insert of transfer_create.sql is no longer where this probe looks for it');
  await knex.raw(
    file
      .replace(completion, '  RETURN NEXT v_transfer;')
      .replace(insert, insert.replace('posting_id)', 'posting_id, probe_key)'))
      .replace("p_note, posted.posting_id)\n  RETURNING", "p_note, posted.posting_id, p_key)\n  RETURNING")
      .replace('CREATE OR REPLACE FUNCTION transfer_create(', 'CREATE OR REPLACE FUNCTION transfer_create_probe_key_column('),
  );
}

async function main(): Promise<void> {
  const db = await createScratchDatabase('probe_item_cost');
  try {
    await fundedProbeParties(db.knex, PARTIES);
    await createNoLockCopy(db.knex);
    await createKeyColumnCopy(db.knex);
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
      'E key as a unique column of the transfer': () => transferCreateScript(db.knex, 0, { functionName: 'transfer_create_probe_key_column' }),
      'F without the transfer event': async () => {
        await db.knex.raw('ALTER TABLE transfers DISABLE TRIGGER transfers_record_event');
        const script = await transferCreateScript(db.knex);
        return {
          script: script.script,
          async remove() {
            await script.remove();
            await db.knex.raw('ALTER TABLE transfers ENABLE TRIGGER transfers_record_event');
          },
        };
      },
    };
    const letters = process.env.PROBE_VARIANTS?.split(',').map((letter) => letter.trim());
    const names = Object.keys(variants).filter((name) => !letters || letters.includes(name.charAt(0)));
    const results: Array<{ variant: string; tps: number; postgres_cpu_ms_per_transfer: number }> = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const script = await (variants[name] as () => Promise<{ script: string; remove(): Promise<void> }>)();
        try {
          const cpuBefore = postgresCpuMs();
          const run = runPgbenchScript(db.url, script.script, 32, SECONDS);
          results.push({ variant: name, tps: run.tps, postgres_cpu_ms_per_transfer: perUnit(postgresCpuMs() - cpuBefore, run.transactions) });
          process.stderr.write(`${name}: ${run.tps} tps\n`);
        } finally {
          await script.remove();
        }
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    const of = (name: string) => results.filter((r) => r.variant === name);
    const baseline = median(of(names[0] as string).map((r) => r.tps));
    const variantsSummary = Object.fromEntries(
      names.map((name) => {
        const tps = of(name).map((r) => r.tps);
        return [
          name,
          {
            median_tps: median(tps),
            min_tps: Math.min(...tps),
            max_tps: Math.max(...tps),
            ratio_to_a: Number((median(tps) / Math.max(1, baseline)).toFixed(3)),
            median_postgres_cpu_ms_per_transfer: median(of(name).map((r) => r.postgres_cpu_ms_per_transfer)),
          },
        ];
      }),
    );
    process.stdout.write(`${JSON.stringify({ probe: 'transfer-item-cost', seconds_per_run: SECONDS, rounds: ROUNDS, results, variants: variantsSummary }, null, 2)}\n`);
  } finally {
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
