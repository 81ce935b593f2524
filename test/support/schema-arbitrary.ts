import fc from 'fast-check';

/**
 * fast-check arbitraries for JSON values that match a JSON Schema of the contract (the subset
 * the contract uses: $ref, allOf, oneOf/anyOf, enum/const, strings with format, pattern and
 * length, integers and numbers with bounds, arrays, objects without additional properties).
 */
type Json = Record<string, unknown>;

export function resolveRef(doc: Json, node: unknown): Json {
  let current = node as Json;
  for (let depth = 0; current && typeof current.$ref === 'string' && depth < 20; depth += 1) {
    const pointer = (current.$ref as string).replace(/^#\//, '').split('/');
    current = pointer.reduce<unknown>((acc, key) => (acc as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc) as Json;
  }
  return current ?? {};
}

function mergeAllOf(doc: Json, schema: Json): Json {
  if (!Array.isArray(schema.allOf)) return schema;
  const merged: Json = { ...schema, allOf: undefined, properties: { ...((schema.properties as Json) ?? {}) }, required: [...((schema.required as string[]) ?? [])] };
  for (const part of schema.allOf as unknown[]) {
    const resolved = mergeAllOf(doc, resolveRef(doc, part));
    Object.assign(merged.properties as Json, resolved.properties ?? {});
    (merged.required as string[]).push(...((resolved.required as string[]) ?? []));
    merged.type ??= resolved.type;
  }
  return merged;
}

function stringArbitrary(schema: Json): fc.Arbitrary<string> {
  const max = Math.min(Number(schema.maxLength ?? 24), 40);
  const min = Number(schema.minLength ?? 0);
  const fits = (s: string) => s.length >= min && s.length <= Number(schema.maxLength ?? Infinity);
  switch (schema.format) {
    case 'uuid':
      return fc.uuid({ version: 4 });
    case 'date-time':
      return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
    case 'date':
      return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
    case 'email':
      return fc.emailAddress().filter(fits);
    case 'uri':
      return fc.webUrl().filter(fits);
    default:
      break;
  }
  if (typeof schema.pattern === 'string') {
    const examples = [...((schema.examples as unknown[]) ?? []), schema.example].filter((e): e is string => typeof e === 'string');
    // `^[class]+$` with a length: characters of the class, of a length within the bounds
    // (stringMatching knows no length, and filtering its short strings would never end).
    const charClass = /^\^\[([^\]]+)\][+*]\$$/.exec(schema.pattern);
    if (charClass) {
      const chars = expandClass(charClass[1] as string);
      return fc.string({ unit: fc.constantFrom(...chars), minLength: Math.max(min, 1), maxLength: Math.max(min, 1, max) });
    }
    const matching = fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
    return examples.length ? fc.oneof(fc.constantFrom(...examples), matching) : matching;
  }
  return fc.string({ minLength: min, maxLength: Math.max(min, max) });
}

/** The characters of a regular-expression class body such as `A-Za-z0-9._~-`. */
function expandClass(body: string): string[] {
  const chars: string[] = [];
  for (let i = 0; i < body.length; i += 1) {
    let char = body[i] as string;
    if (char === '\\') char = body[++i] as string;
    if (body[i + 1] === '-' && i + 2 < body.length) {
      const end = body[i + 2] as string;
      for (let code = char.charCodeAt(0); code <= end.charCodeAt(0); code += 1) chars.push(String.fromCharCode(code));
      i += 2;
    } else chars.push(char);
  }
  return chars.filter((c) => c >= ' ' && c <= '~');
}

/**
 * Arbitraries already built, by schema node and depth: arbitraries are immutable, and building
 * one (fast-check prepares string and URL arbitraries eagerly) costs more than drawing from it,
 * so every operation that meets a schema again reuses it.
 */
const built = new WeakMap<Json, Map<number, fc.Arbitrary<unknown>>>();

export function valueFor(doc: Json, node: unknown, depth = 0): fc.Arbitrary<unknown> {
  if (node === null || typeof node !== 'object') return buildValueFor(doc, node, depth);
  let byDepth = built.get(node as Json);
  if (!byDepth) built.set(node as Json, (byDepth = new Map()));
  let arbitrary = byDepth.get(depth);
  if (!arbitrary) byDepth.set(depth, (arbitrary = buildValueFor(doc, node, depth)));
  return arbitrary;
}

function buildValueFor(doc: Json, node: unknown, depth: number): fc.Arbitrary<unknown> {
  const schema = mergeAllOf(doc, resolveRef(doc, node));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.oneOf ?? schema.anyOf) as unknown[] | undefined;
  if (Array.isArray(alternatives)) return fc.oneof(...alternatives.map((alt) => valueFor(doc, alt, depth + 1)));
  const type = Array.isArray(schema.type) ? (schema.type as string[]).find((t) => t !== 'null') : (schema.type as string | undefined);
  switch (type) {
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
      return fc.integer({ min: Math.max(Number(schema.minimum ?? -1_000), -1_000_000), max: Math.min(Number(schema.maximum ?? 1_000_000), 1_000_000) });
    case 'number':
      return fc.oneof(
        fc.integer({ min: Math.ceil(Number(schema.minimum ?? -1_000)), max: Math.floor(Math.min(Number(schema.maximum ?? 1_000_000), 1_000_000)) }),
        fc.double({ min: Number(schema.minimum ?? -1_000), max: Math.min(Number(schema.maximum ?? 1_000_000), 1_000_000), noNaN: true, noDefaultInfinity: true }),
      );
    case 'boolean':
      return fc.boolean();
    case 'array':
      return depth > 4 ? fc.constant([]) : fc.array(valueFor(doc, schema.items ?? {}, depth + 1), { minLength: Number(schema.minItems ?? 0), maxLength: Math.min(Number(schema.maxItems ?? 3), 3) });
    case 'object':
    default: {
      const properties = (schema.properties as Json | undefined) ?? {};
      if (!Object.keys(properties).length && type !== 'object') return fc.constant(null);
      const required = new Set((schema.required as string[]) ?? []);
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, sub] of Object.entries(properties)) record[name] = valueFor(doc, sub, depth + 1);
      return fc.record(record, { requiredKeys: [...required].filter((key) => key in record) });
    }
  }
}

/** A value that breaks the schema in one way: a missing required member, a wrong type, an unknown member, or another JSON type. */
export function invalidValueFor(doc: Json, node: unknown): fc.Arbitrary<unknown> {
  const schema = mergeAllOf(doc, resolveRef(doc, node));
  const required = (schema.required as string[] | undefined) ?? [];
  const properties = Object.keys((schema.properties as Json | undefined) ?? {});
  const wrong = fc.oneof(fc.constant(null), fc.constant(true), fc.constant([]), fc.constant({}), fc.constant('x'.repeat(300)), fc.constant(-1e300), fc.constant('1e400'));
  const mutations: Array<fc.Arbitrary<unknown>> = [wrong];
  if (properties.length) {
    mutations.push(
      fc.tuple(valueFor(doc, schema), fc.constantFrom(...properties), wrong).map(([value, key, bad]) => ({ ...(value as Json), [key]: bad })),
      valueFor(doc, schema).map((value) => ({ ...(value as Json), unexpected_member: 'x' })),
    );
  }
  if (required.length) mutations.push(fc.tuple(valueFor(doc, schema), fc.constantFrom(...required)).map(([value, key]) => ({ ...(value as Json), [key]: undefined })));
  return fc.oneof(...mutations);
}
