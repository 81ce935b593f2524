import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';

/**
 * SQL as code: every function of the database lives in its module as one `.sql` file,
 * `src/modules/<area>/sql/<function name>.sql`, holding one `CREATE OR REPLACE FUNCTION`
 * statement. That file is the one place that shows what runs today. A migration applies the
 * files (`applyDatabaseFunctions`); changing a file therefore comes with a new migration that
 * applies it again, and test/integration/database-functions.test.ts fails while the database's
 * function differs from its file (or a function has no file).
 *
 * Older migrations keep the text they created at the time (they must still run on a fresh
 * database, in order); they are history, not the place to read the current code.
 */
export const MODULES_DIRECTORY = path.join(__dirname, '..', 'modules');

export interface DatabaseFunctionFile {
  /** The function's name: the file's name without `.sql`. */
  name: string;
  /** `<area>/sql/<name>.sql`, relative to src/modules. */
  file: string;
  sql: string;
}

/** Every module's `sql/*.sql`, in a stable order (module, then file). */
export function databaseFunctionFiles(modulesDirectory = MODULES_DIRECTORY): DatabaseFunctionFile[] {
  const files: DatabaseFunctionFile[] = [];
  for (const area of fs.readdirSync(modulesDirectory).sort()) {
    const directory = path.join(modulesDirectory, area, 'sql');
    if (!fs.existsSync(directory)) continue;
    for (const name of fs.readdirSync(directory).sort()) {
      if (!name.endsWith('.sql')) continue;
      const sql = fs.readFileSync(path.join(directory, name), 'utf8');
      const functionName = name.slice(0, -'.sql'.length);
      if (!new RegExp(`^CREATE OR REPLACE FUNCTION ${functionName}\\(`, 'm').test(sql)) {
        throw new Error(`src/modules/${area}/sql/${name} must hold "CREATE OR REPLACE FUNCTION ${functionName}(...)"`);
      }
      files.push({ name: functionName, file: `${area}/sql/${name}`, sql });
    }
  }
  return files;
}

/**
 * Applies the current text of the named functions (all of them when `names` is omitted):
 * `CREATE OR REPLACE`, so a migration can run it whatever the previous version was. A change
 * of a function's arguments or result type needs a `DROP FUNCTION` in the migration first.
 */
export async function applyDatabaseFunctions(knex: Knex | Knex.Transaction, names?: readonly string[]): Promise<void> {
  const files = databaseFunctionFiles();
  for (const name of names ?? []) {
    if (!files.some((file) => file.name === name)) throw new Error(`no src/modules/*/sql/${name}.sql`);
  }
  for (const file of files) {
    if (names && !names.includes(file.name)) continue;
    await knex.raw(file.sql);
  }
}
