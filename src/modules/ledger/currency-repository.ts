import type { Knex } from 'knex';
import { ValidationError } from '../../errors';

export interface Currency {
  /** ISO 4217 alphabetic code, upper case, or a stablecoin (USDC, USDT). */
  code: string;
  /** Minor-unit exponent: XOF 0, EUR 2, KWD 3. */
  exponent: number;
  name: string;
}

interface CurrencyRow {
  code: string;
  exponent: number;
  name: string;
}

const toCurrency = (row: CurrencyRow): Currency => ({ code: row.code, exponent: Number(row.exponent), name: row.name });

/**
 * The ISO 4217 currencies the platform supports. The table is reference data that only a
 * migration changes, so rows are cached per process once read.
 */
export class CurrencyRepository {
  private readonly cache = new Map<string, Currency>();

  async find(db: Knex | Knex.Transaction, code: string): Promise<Currency | undefined> {
    const cached = this.cache.get(code);
    if (cached) return cached;
    if (!/^[A-Z][A-Z0-9]{2,9}$/.test(code)) return undefined;
    const row = (await db('currencies').where({ code }).first()) as CurrencyRow | undefined;
    if (!row) return undefined;
    const currency = toCurrency(row);
    this.cache.set(code, currency);
    return currency;
  }

  /** The currency, or a 400 ValidationError naming `field` when the code is unknown. */
  async require(db: Knex | Knex.Transaction, code: string, field = 'currency'): Promise<Currency> {
    const currency = await this.find(db, code);
    if (!currency) {
      throw ValidationError.field(field, `Unknown or unsupported currency "${code}": use an ISO 4217 code such as XOF, EUR or USD.`);
    }
    return currency;
  }

  /**
   * Each row with its currency's exponent: how another module's repository adds it to its rows
   * instead of joining this module's table (a code is read once, then cached).
   */
  async withExponents<Row extends { currency: string }>(db: Knex | Knex.Transaction, rows: readonly Row[]): Promise<Array<Row & { exponent: number }>> {
    const exponents = new Map<string, number>();
    for (const code of new Set(rows.map((row) => row.currency.trim()))) exponents.set(code, (await this.require(db, code)).exponent);
    return rows.map((row) => ({ ...row, exponent: exponents.get(row.currency.trim()) as number }));
  }

  async list(db: Knex | Knex.Transaction): Promise<Currency[]> {
    const rows = (await db('currencies').orderBy('code')) as CurrencyRow[];
    return rows.map((row) => {
      const currency = toCurrency(row);
      this.cache.set(currency.code, currency);
      return currency;
    });
  }
}

/** The process-wide instance (the table is immutable reference data). */
export const currencies = new CurrencyRepository();
