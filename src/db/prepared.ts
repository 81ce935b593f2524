/**
 * Names a hot-path query so that node-postgres prepares it once per connection: PostgreSQL
 * then skips parsing it, and planning it once a generic plan is chosen, on every later run
 * (knex hands the name to pg through `.options()`). pg refuses a name reused for another SQL
 * text, so a name must always go with one text: give each shape of a query its own name.
 */
export function prepared<Query extends { options(options: Readonly<Record<string, unknown>>): Query }>(name: string, query: Query): Query {
  return query.options({ name });
}
