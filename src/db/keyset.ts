import type { Knex } from 'knex';
import { ValidationError } from '../errors';
import { queryPrepared } from './prepared';
import { RenderedJson } from './rendered-json';

type Db = Knex | Knex.Transaction;

/** One page of a list, as every list operation answers it (the contract's list object). */
export interface Page<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  /** The id of the page's last item when more follow: the next request's `starting_after`. */
  next_cursor: string | null;
}

/** At most `limit` items, after the item `startingAfter` (the previous page's next_cursor). */
export interface PageRequest {
  limit: number;
  startingAfter?: string;
}

/** Columns of the listed table and the values that bound one list: `{ organization_id: orgId }`. */
export type KeysetScope = Record<string, string | number | boolean>;

export interface KeysetOptions {
  /** The listed table; its `id` column is the cursor. */
  table: string;
  /** The table's alias in the list query: `db('payments as p')` -> `p`. */
  alias: string;
  /** The order, newest first: columns, most significant first, the last unique in a scope (default created_at, id). */
  orderBy?: readonly string[];
  /** What a row is, for the 400 of a foreign cursor: `a payment of this organisation`. */
  noun: string;
}

const CURSOR_ALIAS = 'keyset_cursor';

/**
 * Keyset (cursor) pagination of one table, newest first: a page resumes strictly after the
 * cursor row's position, read in SQL (a timestamptz keeps microseconds a JS Date would lose),
 * so rows inserted meanwhile never shift or repeat a page. A repository declares one Keyset
 * per listed table and calls `rows` from its list query:
 *
 *   const PAYMENTS = new Keyset({ table: 'payments', alias: 'p', noun: 'a payment of this organisation' });
 *   const rows = await PAYMENTS.rows(db, db('payments as p').where(...), { organization_id: orgId }, request);
 *   // the handler answers toPage(rows.map(present), request.limit)
 */
export class Keyset {
  private readonly orderBy: readonly string[];

  constructor(private readonly options: KeysetOptions) {
    this.orderBy = options.orderBy ?? ['created_at', 'id'];
  }

  /** True when `id` is a row of the scope (a cursor this list may resume from). */
  async cursorInScope(db: Db, scope: KeysetScope, id: string): Promise<boolean> {
    return (await db(this.options.table).where({ ...scope, id }).first('id')) !== undefined;
  }

  /** 400 `query.starting_after` unless `startingAfter` is a row of the scope. */
  async requireCursor(db: Db, scope: KeysetScope, startingAfter: string): Promise<void> {
    if (!(await this.cursorInScope(db, scope, startingAfter))) throw this.foreignCursor();
  }

  /**
   * 400 `query.starting_after` unless `startingAfter` is a row of `list`: the list's own query
   * (the table under its alias, the list's scope applied), for a list whose scope no column
   * equality says (a party as buyer or seller, a membership, a user's events). Then `paginate`.
   */
  async requireCursorIn(list: Knex.QueryBuilder, startingAfter: string): Promise<void> {
    const { alias } = this.options;
    if ((await list.clone().where(`${alias}.id`, startingAfter).first(`${alias}.id`)) === undefined) throw this.foreignCursor();
  }

  /** The 400 of a cursor that is not a row of this list (or not a row id at all). */
  foreignCursor(): ValidationError {
    return ValidationError.field('query.starting_after', `starting_after is not ${this.options.noun}: pass the next_cursor of a previous page.`);
  }

  /**
   * Restricts `query` (which reads the table under its alias) to the rows after the cursor,
   * newest first, `limit + 1` of them: the extra row tells toPage whether more follow. The
   * cursor must already be known to be in the scope (see `rows`).
   */
  paginate(db: Db, query: Knex.QueryBuilder, scope: KeysetScope, request: PageRequest): Knex.QueryBuilder {
    const { alias, table } = this.options;
    if (request.startingAfter !== undefined) {
      const position = db(`${table} as ${CURSOR_ALIAS}`)
        .select(this.orderBy.map((column) => `${CURSOR_ALIAS}.${column}`))
        .where(`${CURSOR_ALIAS}.id`, request.startingAfter)
        .andWhere(Object.fromEntries(Object.entries(scope).map(([column, value]) => [`${CURSOR_ALIAS}.${column}`, value])));
      const columns = this.orderBy.map((column) => `${alias}.${column}`);
      query.andWhere(db.raw(`(${columns.map(() => '??').join(', ')}) < ?`, [...columns, position]));
    }
    return query.orderBy(this.orderBy.map((column) => ({ column: `${alias}.${column}`, order: 'desc' }))).limit(request.limit + 1);
  }

  /** Checks the cursor (400 when foreign), then runs the page's query: `limit + 1` rows at most. */
  async rows<Row>(db: Db, query: Knex.QueryBuilder, scope: KeysetScope, request: PageRequest): Promise<Row[]> {
    if (request.startingAfter !== undefined) await this.requireCursor(db, scope, request.startingAfter);
    return (await this.paginate(db, query, scope, request)) as Row[];
  }

  /**
   * `rows` for a list query written as SQL (no knex building on a hot list): `select`
   * is `SELECT ... FROM <table> <alias> WHERE ...` with `$1`... parameters `values`; the cursor
   * condition, the order and the limit are added, and the statement runs prepared under `name`
   * plus its shape (one name per text). With a `projection`, the page's rows are the subquery
   * `<alias>` of an outer SELECT of `projection.columns` (see preparedStatement). Same rows,
   * same order and the same 400 for a foreign cursor as `rows`.
   */
  async preparedRows<Row>(db: Db, name: string, select: string, values: readonly unknown[], scope: KeysetScope, request: PageRequest, projection?: PageProjection): Promise<Row[]> {
    if (request.startingAfter !== undefined) await this.requireCursor(db, scope, request.startingAfter);
    const statement = this.preparedStatement(name, select, values, scope, request, projection);
    return queryPrepared<Row>(db, statement.name, statement.text, statement.values);
  }

  /**
   * The statement `preparedRows` runs (the cursor not checked): its name, text and parameters.
   *
   * Without a projection: `select`, the cursor, the order and `LIMIT limit + 1` (a parameter).
   * With one, the page's rows are read first, bounded by a literal (the smallest of
   * PAGE_BOUNDS that holds `limit + 1`), and the projection is computed over them, under
   * `LIMIT limit + 1` (a parameter). PostgreSQL guesses a parameter LIMIT at a tenth of what it
   * bounds: over the whole table, the guess made the costly projection of a generic plan look
   * dear, so every run was planned again (0.28 ms of about 1.2 per invoices page); over a
   * literal bound the generic plan wins and the statement is planned once per connection.
   */
  preparedStatement(
    name: string,
    select: string,
    values: readonly unknown[],
    scope: KeysetScope,
    request: PageRequest,
    projection?: PageProjection,
  ): { name: string; text: string; values: unknown[] } {
    const { alias, table } = this.options;
    const params = [...values];
    const param = (value: unknown) => `$${params.push(value)}`;
    let text = select;
    if (request.startingAfter !== undefined) {
      const inScope = Object.entries(scope).map(([column, value]) => ` AND ${CURSOR_ALIAS}.${column} = ${param(value)}`).join('');
      text += ` AND (${this.orderBy.map((column) => `${alias}.${column}`).join(', ')}) < (SELECT ${this.orderBy.map((column) => `${CURSOR_ALIAS}.${column}`).join(', ')} FROM ${table} ${CURSOR_ALIAS} WHERE ${CURSOR_ALIAS}.id = ${param(request.startingAfter)}${inScope})`;
    }
    const order = ` ORDER BY ${this.orderBy.map((column) => `${alias}.${column} DESC`).join(', ')}`;
    const shape = request.startingAfter === undefined ? name : `${name}_after`;
    if (!projection) return { name: shape, text: `${text}${order} LIMIT ${param(request.limit + 1)}`, values: params };
    const bound = PAGE_BOUNDS.find((size) => size >= request.limit + 1) ?? request.limit + 1;
    return {
      name: `${shape}_${bound}`,
      text: `SELECT ${projection.columns} FROM (${text}${order} LIMIT ${bound}) ${alias}${projection.join ? ` ${projection.join}` : ''}${order} LIMIT ${param(request.limit + 1)}`,
      values: params,
    };
  }
}

/** A page computed over its rows (see Keyset.preparedStatement). */
export interface PageProjection {
  /** The SELECT list, over the page's rows under the keyset's alias; it names `id`. */
  columns: string;
  /** Joins after the page's rows (`JOIN currencies c ON c.code = d.currency`). */
  join?: string;
}

/**
 * The literal bounds of a projected page's rows: `limit + 1` for the default and the largest
 * limit (50, 500). Two, so a list prepares at most two statements per filter shape and cursor.
 */
const PAGE_BOUNDS = [51, 501];

/** The page of `rows` fetched by Keyset.rows (`limit + 1` at most): the extra row only says that more follow. */
export function toPage<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const hasMore = rows.length > limit;
  const data = hasMore ? rows.slice(0, limit) : rows;
  return { object: 'list', data, has_more: hasMore, next_cursor: hasMore ? (data[data.length - 1]?.id ?? null) : null };
}

/**
 * toPage for rows the database rendered (`json`: one item of the list as JSON text): the same
 * page, written as JSON.stringify writes toPage's object, without parsing the items.
 */
export function toRenderedPage<T>(rows: Array<{ id: string; json: string }>, limit: number): RenderedJson<Page<T>> {
  const page = toPage(rows, limit);
  return new RenderedJson(`{"object":"list","data":[${page.data.map((row) => row.json).join(',')}],"has_more":${page.has_more},"next_cursor":${JSON.stringify(page.next_cursor)}}`);
}
