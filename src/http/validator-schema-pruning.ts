/**
 * express-openapi-validator compiles each operation's request schema, and each response's, on
 * first use with the WHOLE contract as the schema's root (every path and every component, about
 * 1 MB of JSON): Ajv walks all of it to collect ids on every compile, so the first request of
 * each operation cost tens of milliseconds (most of a test file that touches every operation,
 * and a cold instance's first requests). A compiled schema needs only the components its own
 * part reaches by `$ref` (or names in a discriminator's mapping), so each compile is handed
 * those alone, under the same `#/components/<section>/<name>` pointers. The library reads
 * `useAjvCache` off its module at call time, so replacing the export is enough; a schema that
 * points anywhere else (into `#/paths`, another document) is handed over whole, as before.
 */
type Schema = Record<string, unknown>;
type UseAjvCache = (ajv: { getSchema(key: string): unknown }, schema: Schema, cacheKey: string) => unknown;

let installed = false;

export function installValidatorSchemaPruning(): void {
  if (installed) return;
  const util = require(require.resolve('express-openapi-validator/dist/middlewares/util.js')) as { useAjvCache: UseAjvCache };
  const original = util.useAjvCache;
  util.useAjvCache = (ajv, schema, cacheKey) => (ajv.getSchema(cacheKey) ? original(ajv, schema, cacheKey) : original(ajv, prunedSchema(schema), cacheKey));
  installed = true;
}

const COMPONENT_POINTER = /^#\/components\/([^/]+)\/([^/]+)(?:\/|$)/;

/** A JSON pointer's segment as written (`~1` is `/`, `~0` is `~`, percent-encoding decoded). */
function unescapeSegment(segment: string): string {
  return decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Every reference a part of a schema makes: its `$ref`s and its discriminators' mappings. */
function referencesOf(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) referencesOf(item, found);
  } else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value);
      else if (key === 'mapping' && value !== null && typeof value === 'object') {
        for (const target of Object.values(value)) if (typeof target === 'string') found.push(target);
        referencesOf(value, found);
      } else referencesOf(value, found);
    }
  }
  return found;
}

/**
 * The schema with `components` cut to what its own part reaches (transitively), `paths`
 * dropped; the schema itself when a reference leads anywhere else, or to a component the
 * contract does not have (Ajv then reports it as it always did).
 */
export function prunedSchema(schema: Schema): Schema {
  const { paths: _paths, components, ...own } = schema;
  const available = (components ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const kept: Record<string, Record<string, unknown>> = {};
  const pending = referencesOf(own);
  for (let ref = pending.pop(); ref !== undefined; ref = pending.pop()) {
    const pointer = COMPONENT_POINTER.exec(ref);
    if (!pointer) return schema;
    const section = unescapeSegment(pointer[1] as string);
    const name = unescapeSegment(pointer[2] as string);
    if (kept[section]?.[name] !== undefined) continue;
    const target = available[section]?.[name];
    if (target === undefined) return schema;
    (kept[section] ??= {})[name] = target;
    pending.push(...referencesOf(target));
  }
  return { ...own, components: kept };
}
