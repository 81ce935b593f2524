import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { databaseFunctionFiles, sqlHash, type FunctionPins } from '../../src/db/database-functions';
import { MIGRATIONS_DIRECTORY } from '../../src/db/database';
import { testKnex } from '../support/database';

/**
 * SQL as code: each database function lives in its module as a `.sql` file, and
 * what runs in the database is exactly that file. Applying a file inside a transaction that is
 * rolled back shows what the file would make of the function; it must be what is there.
 */
const knex = testKnex();

/** Our functions in the schema: not those of extensions (pgcrypto and the like). */
async function functionDefinitions(db: Knex | Knex.Transaction): Promise<Map<string, string[]>> {
  const { rows } = await db.raw<{ rows: Array<{ name: string; definition: string }> }>(`
    SELECT p.proname AS name, pg_get_functiondef(p.oid) AS definition
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = current_schema() AND p.prokind = 'f'
       AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
     ORDER BY p.proname, pg_get_functiondef(p.oid)`);
  const byName = new Map<string, string[]>();
  for (const row of rows) byName.set(row.name, [...(byName.get(row.name) ?? []), row.definition]);
  return byName;
}

class Rollback extends Error {}

/** The newest pin of each function over every migration, in migration order. */
async function newestPins(): Promise<Map<string, { hash: string; migration: string }>> {
  const pins = new Map<string, { hash: string; migration: string }>();
  const migrations = fs.readdirSync(MIGRATIONS_DIRECTORY).filter((file) => /^\d{14}_[\w-]+\.ts$/.test(file)).sort();
  for (const migration of migrations) {
    const { FUNCTIONS } = (await import(path.join(MIGRATIONS_DIRECTORY, migration))) as { FUNCTIONS?: FunctionPins };
    for (const [name, hash] of Object.entries(FUNCTIONS ?? {})) pins.set(name, { hash, migration });
  }
  return pins;
}

describe('database functions as code', () => {
  it('the newest migration that pins a function pins the text of its file (a changed file needs a new migration)', async () => {
    const pins = await newestPins();
    for (const file of databaseFunctionFiles()) {
      expect({ file: file.file, pinned: pins.get(file.name)?.hash }, `add a migration that applies ${file.file} with the pin ${sqlHash(file.sql)}`).toEqual({
        file: file.file,
        pinned: sqlHash(file.sql),
      });
    }
  });

  it('every function of the database has its file under src/modules/<area>/sql/, and every file its function', async () => {
    const files = databaseFunctionFiles().map((file) => file.name);
    expect(files).toEqual(expect.arrayContaining(['ledger_post', 'write_apply', 'write_apply_batch']));
    expect([...(await functionDefinitions(knex)).keys()].sort()).toEqual([...files].sort());
  });

  it("each function in the database is exactly its file's text (a changed file needs a migration that applies it)", async () => {
    const current = await functionDefinitions(knex);
    for (const file of databaseFunctionFiles()) {
      let applied: string[] | undefined;
      await knex
        .transaction(async (trx) => {
          await trx.raw(file.sql);
          applied = (await functionDefinitions(trx)).get(file.name);
          throw new Rollback();
        })
        .catch((error: unknown) => {
          if (!(error instanceof Rollback)) throw error;
        });
      expect({ file: file.file, definitions: current.get(file.name) }).toEqual({ file: file.file, definitions: applied });
    }
  });
});
