import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';

/**
 * SQL as code: every function of the database lives in its module as one `.sql` file,
 * `src/modules/<area>/sql/<function name>.sql`, holding one `CREATE OR REPLACE FUNCTION`
 * statement. That file is the one place that shows what runs today.
 *
 * A migration applies files by name and pins each to the hash of the text it means
 * (`export const FUNCTIONS = { write_apply: '<hash>' }`, `applyDatabaseFunctions(knex,
 * FUNCTIONS)`). Changing a file therefore comes with a new migration that pins its new hash:
 * test/integration/database-functions.test.ts fails while the newest pin of a function is not
 * its file's hash (`sqlHash`), while a function of the database has no file, or while the
 * database's function differs from its file. On a fresh database an older migration whose pin
 * no longer matches the file skips that function (the newer migration that pins the current
 * text applies it), so old migrations stay runnable. Migrations before these files keep the
 * text they created at the time: history, not the place to read the current code.
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

/** The pin of a file's text: the first 16 hex digits of its SHA-256. */
export function sqlHash(sql: string): string {
  return crypto.createHash('sha256').update(sql).digest('hex').slice(0, 16);
}

/** Function name -> the hash of the text a migration applies. */
export type FunctionPins = Readonly<Record<string, string>>;

/**
 * Applies (`CREATE OR REPLACE`) each pinned function whose file still has the pinned text;
 * a file changed since is left to the newer migration that pins it, a file removed since to
 * the newer migration that drops its function. A change of a function's
 * arguments or result type needs a `DROP FUNCTION` in that migration first.
 */
export async function applyDatabaseFunctions(knex: Knex | Knex.Transaction, pins: FunctionPins): Promise<void> {
  const files = databaseFunctionFiles();
  for (const [name, hash] of Object.entries(pins)) {
    const file = files.find((candidate) => candidate.name === name);
    // A function whose file is gone is dropped by the newer migration that removed it.
    if (file && sqlHash(file.sql) === hash) await knex.raw(file.sql);
  }
}
