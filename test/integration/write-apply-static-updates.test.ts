import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EscrowService } from '../../src/modules/escrows';
import { TontineService } from '../../src/modules/tontines';
import { testKnex } from '../support/database';
import { escrowThroughService } from '../support/escrows';
import { fundedUser } from '../support/factories';
import { tontineThroughService } from '../support/tontines';

/**
 * write_apply updates an escrow, a tontine or a contribution by id in a static statement that
 * sets every column but the id from the row overlaid with the decision's values. These tests
 * hold it to the dynamic statement every other update takes (a row named by its `key` takes it):
 * the same row after the same change, the same refusal when the row no longer shows what was
 * read, and every column of the table in its list, so a column a migration adds cannot be left
 * out of a static update unnoticed.
 */
const knex = testKnex();
const SOURCE = fs.readFileSync(path.join(__dirname, '../../src/modules/writes/sql/write_apply.sql'), 'utf8');
const STATIC_TABLES = { escrows: 'escrow_columns', tontines: 'tontine_columns', tontine_contributions: 'contribution_columns' } as const;
type StaticTable = keyof typeof STATIC_TABLES;

const split = (list: string) => list.split(',').map((column) => column.trim());

/** The columns the function's constant names for `table`, and those its static UPDATE sets and reads back. */
function listedColumns(table: StaticTable): { constant: string[]; set: string[]; selected: string[] } {
  const constant = new RegExp(`${STATIC_TABLES[table]} CONSTANT text\\[\\] := '\\{([^}]*)\\}'`).exec(SOURCE);
  const update = new RegExp(`UPDATE ${table} t SET \\(([^)]*)\\)\\s*= \\(SELECT ([^]*?)\\s+FROM jsonb_populate_record\\(t, vals\\)`).exec(SOURCE);
  if (!constant?.[1] || !update?.[1] || !update[2]) throw new Error(`write_apply.sql has no static update of ${table}`);
  return { constant: split(constant[1]), set: split(update[1]), selected: split(update[2]).map((column) => column.replace(/^r\./, '')) };
}

async function tableColumns(table: StaticTable): Promise<string[]> {
  const rows = (await knex('information_schema.columns').where({ table_schema: 'public', table_name: table }).orderBy('ordinal_position').select('column_name')) as Array<{ column_name: string }>;
  return rows.map((row) => row.column_name).filter((column) => column !== 'id');
}

type Change = { table: StaticTable; set: Record<string, unknown>; expect?: Record<string, unknown> };

/** Applies `change` to the row `id` in a transaction rolled back, by id (static) or by key (dynamic): the row after it, or the error. */
async function applied(change: Change, id: string, by: 'id' | 'key'): Promise<{ row?: Record<string, unknown>; error?: string }> {
  const item = { ...change, ...(by === 'id' ? { id } : { key: { id } }) };
  const outcome: { row?: Record<string, unknown>; error?: string } = {};
  await withTransaction(knex, async (trx: Knex.Transaction) => {
    try {
      await trx.raw('SELECT write_apply(?::jsonb)', [JSON.stringify({ changes: [item] })]);
      outcome.row = (await trx(change.table).where({ id }).first()) as Record<string, unknown>;
    } catch (error) {
      const { code, message } = error as { code?: string; message: string };
      outcome.error = `${code}: ${message.replace(/^.*?(the \w+ row)/, '$1')}`;
    }
    throw Object.assign(new Error('rolled back'), { rollback: true });
  }).catch((error: { rollback?: boolean }) => {
    if (!error.rollback) throw error;
  });
  return outcome;
}

/** A funded escrow, an active tontine and one of its contributions. */
async function rows(): Promise<Record<StaticTable, string>> {
  const escrow = await escrowThroughService(new EscrowService({ knex, feeBps: 100, clock: () => new Date() }), { buyerBalance: 1_000_000n });
  const users = [await fundedUser({ XOF: 10_000n }), await fundedUser({ XOF: 10_000n })];
  const tontine = await tontineThroughService(new TontineService({ knex }), users);
  const contribution = (await knex('tontine_contributions').where({ tontine_id: tontine.id }).first('id')) as { id: string };
  return { escrows: escrow.id, tontines: tontine.id, tontine_contributions: contribution.id };
}

describe("write_apply's static updates", () => {
  it.each(Object.keys(STATIC_TABLES) as StaticTable[])('list every column of %s but the id, in the constant and in the statement alike', async (table) => {
    const listed = listedColumns(table);
    expect(listed.set).toEqual(listed.constant);
    expect(listed.selected).toEqual(listed.constant);
    expect([...listed.constant].sort()).toEqual((await tableColumns(table)).sort());
  });

  it('leave a row as the dynamic statement leaves it, columns not set kept, and refuse a row that changed with the same WRT02', async () => {
    const ids = await rows();
    const at = '2026-11-28T10:11:12.345Z';
    const changes: Array<[Change, string]> = [
      [{ table: 'escrows', expect: { status: 'awaiting_funding' }, set: { delivery_note: 'left at the gate', updated_at: at, reference: null } }, ids.escrows],
      [{ table: 'tontines', expect: { status: 'active', paid_in_cycle: 0 }, set: { paid_in_cycle: 1, name: 'Renamed circle' } }, ids.tontines],
      [{ table: 'tontine_contributions', set: { status: 'late', late_at: at } }, ids.tontine_contributions],
      [{ table: 'escrows', expect: { status: 'released' }, set: { delivery_note: 'never' } }, ids.escrows],
      [{ table: 'tontines', expect: { current_cycle: 9 }, set: { paid_in_cycle: 3 } }, ids.tontines],
    ];
    for (const [change, id] of changes) {
      const before = (await knex(change.table).where({ id }).first()) as Record<string, unknown>;
      const bystatic = await applied(change, id, 'id');
      const bydynamic = await applied(change, id, 'key');
      expect(bystatic, JSON.stringify(change)).toEqual(bydynamic);
      if (bystatic.row) {
        // Every column set took its value; every other one kept the row's.
        for (const [column, value] of Object.entries(bystatic.row)) {
          if (!(column in change.set)) expect(value, column).toEqual(before[column]);
        }
        expect(bystatic.row).not.toEqual(before);
      } else {
        expect(bystatic.error).toMatch(/^WRT02: the \w+ row .* no longer shows what the decision read/);
      }
    }
  });

  it('take the dynamic statement for a column they do not list: an unknown column is an error, not ignored', async () => {
    const ids = await rows();
    const outcome = await applied({ table: 'escrows', set: { no_such_column: 1 } }, ids.escrows, 'id');
    expect(outcome.error).toMatch(/^42703: /);
  });
});
