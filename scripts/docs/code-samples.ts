/**
 * Adds `x-codeSamples` (curl and the TypeScript client of clients/typescript) to every operation
 * of the bundled contract, from the operation itself: its method and path, its security, its
 * required parameters and its first request-body example. `scripts/generate.sh` runs it on the
 * bundle (never on openapi/), so an operation added to the contract gets its samples from
 * `make generate` with nothing written by hand. `scripts/docs/run-samples.ts` runs every sample
 * against `make run`.
 *
 * Conventions of the samples (the runner relies on them):
 *   - the API base URL is `$API` (curl) / `process.env.API` (TypeScript);
 *   - a bearer token is `$TOKEN` / `process.env.TOKEN`;
 *   - a path parameter `{fooId}` is `$FOO_ID` / `process.env.FOO_ID` (upper snake case);
 *   - a required `Idempotency-Key` is a fresh random key (`openssl rand -hex 16` /
 *     `crypto.randomUUID()`); the TypeScript client adds one to every other POST itself.
 *
 *   npx tsx scripts/docs/code-samples.ts OUT_DIR     rewrites OUT_DIR/openapi.bundled.json
 */
import fs from 'node:fs';
import path from 'node:path';

type Json = Record<string, unknown>;
export const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export interface CodeSample {
  lang: string;
  label: string;
  source: string;
}

export interface SampleParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  example?: unknown;
  /** The values a path parameter allows, when its schema lists them (the sample narrows the variable to them). */
  allowed?: string[];
}

/** `orgId` -> `ORG_ID`, `key` -> `KEY`: the shell and environment variable of a path parameter. */
export function variableFor(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toUpperCase();
}

function resolver(doc: Json) {
  return function resolve(node: unknown): Json {
    let current = node as Json;
    while (current && typeof current.$ref === 'string') {
      const pointer = current.$ref.replace(/^#\//, '').split('/');
      current = pointer.reduce<unknown>((acc, key) => (acc as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc) as Json;
    }
    return current;
  };
}

function exampleOf(parameter: Json, resolve: (node: unknown) => Json): unknown {
  if (parameter.example !== undefined) return parameter.example;
  const examples = parameter.examples as Record<string, Json> | undefined;
  const first = examples ? Object.values(examples)[0] : undefined;
  if (first) return resolve(first).value;
  const schema = resolve(parameter.schema ?? {});
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  return schema.default;
}

/** What a sample of an operation is made of (exported for the runner). */
export interface OperationShape {
  operationId: string;
  method: (typeof METHODS)[number];
  path: string;
  authenticated: boolean;
  parameters: SampleParameter[];
  idempotencyKey: 'required' | 'optional' | null;
  body?: unknown;
  contentType?: string;
  /** Top-level body properties with a default that the example leaves out, and their defaults. */
  bodyDefaults?: Record<string, unknown>;
}

/** The defaults of an object schema's top-level properties (through $ref and allOf). */
function propertyDefaults(schema: Json, resolve: (node: unknown) => Json): Record<string, unknown> {
  const found: Record<string, unknown> = {};
  const node = resolve(schema);
  for (const part of (node.allOf as unknown[] | undefined) ?? []) Object.assign(found, propertyDefaults(part as Json, resolve));
  for (const [name, property] of Object.entries((node.properties ?? {}) as Record<string, unknown>)) {
    const resolved = resolve(property);
    if (resolved.default !== undefined) found[name] = resolved.default;
  }
  return found;
}

export function operationShapes(doc: Json): OperationShape[] {
  const resolve = resolver(doc);
  const globalSecurity = (doc.security ?? []) as Json[];
  const shapes: OperationShape[] = [];
  for (const [route, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      const security = (operation.security ?? globalSecurity) as Json[];
      const authenticated = security.length > 0 && security.every((requirement) => Object.keys(requirement).length > 0);
      const parameters: SampleParameter[] = [];
      let idempotencyKey: OperationShape['idempotencyKey'] = null;
      for (const raw of [...((item.parameters ?? []) as unknown[]), ...((operation.parameters ?? []) as unknown[])]) {
        const parameter = resolve(raw);
        const where = parameter.in as string;
        const name = parameter.name as string;
        const required = parameter.required === true;
        if (where === 'header' && name.toLowerCase() === 'idempotency-key') {
          idempotencyKey = required ? 'required' : 'optional';
          continue;
        }
        if (where === 'path' || ((where === 'query' || where === 'header') && required)) {
          const allowed = resolve(parameter.schema ?? {}).enum as unknown[] | undefined;
          parameters.push({
            name,
            in: where as SampleParameter['in'],
            required,
            example: exampleOf(parameter, resolve),
            ...(Array.isArray(allowed) && allowed.every((value) => typeof value === 'string') ? { allowed: allowed as string[] } : {}),
          });
        }
      }
      const shape: OperationShape = { operationId: operation.operationId as string, method, path: route, authenticated, parameters, idempotencyKey };
      const requestBody = operation.requestBody ? resolve(operation.requestBody) : undefined;
      if (requestBody) {
        const content = requestBody.content as Record<string, Json>;
        const contentType = 'application/json' in content ? 'application/json' : Object.keys(content)[0];
        const media = content[contentType as string] as Json;
        let body = media.example;
        if (body === undefined && media.examples) body = resolve(Object.values(media.examples as Record<string, unknown>)[0]).value;
        if (contentType === 'multipart/form-data' && media.schema) body = multipartExample(media.schema as Json, resolve, body as Json | undefined);
        if (body === undefined) throw new Error(`${String(operation.operationId)}: its request body has no example (every request body needs one)`);
        shape.body = body;
        shape.contentType = contentType;
        if (body && typeof body === 'object' && !Array.isArray(body) && media.schema) {
          const missing = Object.entries(propertyDefaults(media.schema as Json, resolve)).filter(([name]) => !(name in (body as Json)));
          if (missing.length > 0) shape.bodyDefaults = Object.fromEntries(missing);
        }
      }
      shapes.push(shape);
    }
  }
  return shapes;
}

/** A multipart body's example: the operation's example (else each field's example or first enum value); a binary field is always a file. */
function multipartExample(schema: Json, resolve: (value: unknown) => Json, example: Json | undefined): Json {
  const properties = (resolve(schema).properties ?? {}) as Record<string, unknown>;
  const body: Json = {};
  for (const [name, raw] of Object.entries(properties)) {
    const property = resolve(raw);
    if (property.format === 'binary' || property.contentMediaType !== undefined) body[name] = MULTIPART_FILE;
    else if (example && name in example) body[name] = example[name];
    else body[name] = property.example ?? (Array.isArray(property.enum) ? property.enum[0] : (property.examples as unknown[] | undefined)?.[0]);
  }
  return body;
}

/** Stands for a file field in a multipart example: the samples send a minimal PDF made on the spot. */
const MULTIPART_FILE = '<document.pdf>';

const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

export function curlSample(shape: OperationShape): string {
  const route = shape.path.replace(/\{([^}]+)\}/g, (_m, name: string) => `$${variableFor(name)}`);
  const query = shape.parameters
    .filter((parameter) => parameter.in === 'query')
    .map((parameter) => `${encodeURIComponent(parameter.name)}=${encodeURIComponent(String(parameter.example ?? ''))}`)
    .join('&');
  const lines = [`curl -sS -X ${shape.method.toUpperCase()} "$API${route}${query ? `?${query}` : ''}"`];
  if (shape.authenticated) lines.push(`-H "Authorization: Bearer $TOKEN"`);
  if (shape.idempotencyKey === 'required') lines.push(`-H "Idempotency-Key: $(openssl rand -hex 16)"`);
  for (const parameter of shape.parameters.filter((p) => p.in === 'header')) lines.push(`-H ${shellQuote(`${parameter.name}: ${String(parameter.example ?? '')}`)}`);
  if (shape.body !== undefined && shape.contentType === 'multipart/form-data') {
    for (const [name, value] of Object.entries(shape.body as Json)) {
      lines.push(value === MULTIPART_FILE ? `-F ${shellQuote(`${name}=@document.pdf;type=application/pdf`)}` : `-F ${shellQuote(`${name}=${String(value)}`)}`);
    }
    return `printf '%s\\n' '%PDF-1.4' '%%EOF' > document.pdf\n${lines.join(' \\\n  ')}`;
  }
  if (shape.body !== undefined) {
    lines.push(`-H ${shellQuote(`Content-Type: ${shape.contentType ?? 'application/json'}`)}`);
    lines.push(`-d ${shellQuote(JSON.stringify(shape.body))}`);
  }
  return lines.join(' \\\n  ');
}

function tsLiteral(value: unknown, indent: string): string {
  return JSON.stringify(value, null, 2).replace(/\n/g, `\n${indent}`);
}

export function typescriptSample(shape: OperationShape): string {
  const out: string[] = [];
  out.push(`import { createPlatformClient } from '@fintech-platform/client';`, '');
  out.push('const client = createPlatformClient({');
  out.push('  baseUrl: process.env.API!, // e.g. http://localhost:8080/api');
  if (shape.authenticated) out.push('  auth: { accessToken: process.env.TOKEN! }, // or { apiKey: process.env.API_KEY! }');
  out.push('});');
  const params: string[] = [];
  const pathParams = shape.parameters.filter((p) => p.in === 'path');
  const pathValue = (p: SampleParameter): string => `process.env.${variableFor(p.name)}!${p.allowed ? ` as ${p.allowed.map((value) => `'${value}'`).join(' | ')}` : ''}`;
  if (pathParams.length > 0) params.push(`path: { ${pathParams.map((p) => `${/^[A-Za-z_$][\w$]*$/.test(p.name) ? p.name : `'${p.name}'`}: ${pathValue(p)}`).join(', ')} }`);
  const queryParams = shape.parameters.filter((p) => p.in === 'query');
  if (queryParams.length > 0) params.push(`query: { ${queryParams.map((p) => `'${p.name}': ${JSON.stringify(p.example)}`).join(', ')} }`);
  const headers = shape.parameters.filter((p) => p.in === 'header').map((p) => `'${p.name}': ${JSON.stringify(String(p.example ?? ''))}`);
  if (shape.idempotencyKey === 'required') headers.unshift(`'Idempotency-Key': crypto.randomUUID()`);
  if (headers.length > 0) params.push(`header: { ${headers.join(', ')} }`);
  const options: string[] = [];
  if (params.length > 0) options.push(`  params: {\n${params.map((p) => `    ${p},`).join('\n')}\n  },`);
  // The client's types (openapi-typescript) require a property that has a default, so the
  // TypeScript sample spells out the defaults the example leaves to the server.
  const body = shape.bodyDefaults ? { ...(shape.body as Json), ...shape.bodyDefaults } : shape.body;
  if (body !== undefined && shape.contentType === 'multipart/form-data') {
    // openapi-fetch sends a FormData built by bodySerializer; the typed body names the fields.
    out.push('const form = new FormData();');
    for (const [name, value] of Object.entries(body as Json)) {
      out.push(value === MULTIPART_FILE
        ? `form.append('${name}', new Blob(['%PDF-1.4\\n%%EOF\\n'], { type: 'application/pdf' }), 'document.pdf');`
        : `form.append('${name}', ${JSON.stringify(String(value))});`);
    }
    const typed = Object.fromEntries(Object.entries(body as Json).map(([name, value]) => [name, value === MULTIPART_FILE ? '' : value]));
    options.push(`  body: ${tsLiteral(typed, '  ')},`, '  bodySerializer: () => form,');
  } else if (body !== undefined) options.push(`  body: ${tsLiteral(body, '  ')},`);
  const call = `client.${shape.method.toUpperCase()}('${shape.path}'${options.length > 0 ? `, {\n${options.join('\n')}\n}` : ''})`;
  out.push(`const { data, error, response } = await ${call};`);
  out.push('console.log(response.status, data ?? error);');
  return out.join('\n');
}

export function codeSamples(shape: OperationShape): CodeSample[] {
  return [
    { lang: 'Shell', label: 'curl', source: curlSample(shape) },
    { lang: 'TypeScript', label: 'TypeScript client', source: typescriptSample(shape) },
  ];
}

/** Adds `x-codeSamples` to every operation of a bundled contract (in place); returns how many. */
export function addCodeSamples(doc: Json): number {
  const shapes = operationShapes(doc);
  for (const shape of shapes) {
    const operation = (doc.paths as Record<string, Json>)[shape.path]?.[shape.method] as Json;
    operation['x-codeSamples'] = codeSamples(shape);
  }
  return shapes.length;
}

if (require.main === module) {
  const outDir = process.argv[2] ?? 'generated';
  const file = path.join(outDir, 'openapi.bundled.json');
  const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Json;
  const count = addCodeSamples(doc);
  fs.writeFileSync(file, JSON.stringify(doc, null, 2));
  console.log(`x-codeSamples: curl and TypeScript on ${count} operations -> ${file}`);
}
