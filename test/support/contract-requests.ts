import crypto from 'node:crypto';
import type { Role } from '../../src/contract';
import { loadOpenApiDocument } from '../../src/http/openapi-document';

/**
 * Builds a request that passes the validator for any contract operation, from the contract
 * itself: path and required query/header parameters from their examples (a random UUID when
 * there is none), the body from the first request-body example. Used to drive every
 * operation of a table (for example the access-policy matrix) without hand-written requests.
 */
export interface ContractOperation {
  operationId: string;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The contract path, e.g. /business/organizations/{orgId}/checkout */
  path: string;
  security: unknown[] | undefined;
  /** The operation's `x-access` rule (Business operations). */
  access: AccessRule | undefined;
}

/** An `x-access` rule as the contract writes it. */
export interface AccessRule {
  roles: Role[];
  /** Absent for the organisation's own settings (its API keys). */
  module?: string;
  write: boolean;
  requiresActiveOrg?: boolean;
  /** The API key scope the operation needs; absent when keys may not call it. */
  scope?: string;
}

export interface ContractRequest {
  method: ContractOperation['method'];
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** A `multipart/form-data` body: its text fields and, for each `format: binary` field, a small PDF. */
  form?: { fields: Record<string, string>; files: Record<string, Buffer> };
}

/** The smallest bytes the documents module takes for a PDF. */
export const TINY_PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

/** Sends `req`'s body on `call`: JSON, a multipart form, or none. */
export function withContractBody<T extends { send(body: object): T; field(name: string, value: string): T; attach(field: string, file: Buffer, name: string): T }>(call: T, req: ContractRequest): T {
  if (req.form) {
    let multipart = call;
    for (const [name, value] of Object.entries(req.form.fields)) multipart = multipart.field(name, value);
    for (const [name, bytes] of Object.entries(req.form.files)) multipart = multipart.attach(name, bytes, `${name}.pdf`);
    return multipart;
  }
  return req.body === undefined ? call : call.send(req.body as object);
}

type Json = Record<string, unknown>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

let parsed: Json | undefined;

/** The contract, parsed once per test process: read here, never changed (a request's body is a copy). */
function document(): Json {
  parsed ??= loadOpenApiDocument().parse();
  return parsed;
}

function resolve(doc: Json, node: unknown): Json {
  let current = node as Json;
  for (let depth = 0; current && typeof current.$ref === 'string' && depth < 10; depth += 1) {
    const pointer = (current.$ref as string).replace(/^#\//, '').split('/');
    current = pointer.reduce<unknown>((acc, key) => (acc as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc) as Json;
  }
  return current;
}

export function contractOperations(): ContractOperation[] {
  const doc = document();
  const operations: ContractOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const method of METHODS) {
      const op = (item as Json)[method] as Json | undefined;
      if (op) {
        const access = op['x-access'] as AccessRule | undefined;
        operations.push({ operationId: op.operationId as string, method, path, security: structuredClone(op.security as unknown[] | undefined), access: structuredClone(access) });
      }
    }
  }
  return operations;
}

export function findOperation(operationId: string): ContractOperation {
  const found = contractOperations().find((op) => op.operationId === operationId);
  if (!found) throw new Error(`operation ${operationId} is not in the contract`);
  return found;
}

function exampleOf(doc: Json, parameter: Json): unknown {
  if (parameter.example !== undefined) return parameter.example;
  const examples = parameter.examples as Json | undefined;
  if (examples) {
    const first = resolve(doc, Object.values(examples)[0]);
    if (first?.value !== undefined) return first.value;
  }
  const schema = resolve(doc, parameter.schema);
  if (schema?.example !== undefined) return schema.example;
  if (Array.isArray(schema?.examples) && schema.examples.length) return schema.examples[0];
  if (Array.isArray(schema?.enum) && schema.enum.length) return schema.enum[0];
  return crypto.randomUUID();
}

/** A valid request for `operationId`, with `pathValues` overriding path parameters. */
export function contractRequest(operationId: string, pathValues: Record<string, string>): ContractRequest {
  const doc = document();
  const op = findOperation(operationId);
  const item = (doc.paths as Json)[op.path] as Json;
  const operation = item[op.method] as Json;
  const parameters = [...((item.parameters as unknown[]) ?? []), ...((operation.parameters as unknown[]) ?? [])].map((p) => resolve(doc, p));
  let url = op.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const parameter of parameters) {
    const name = parameter.name as string;
    if (parameter.in === 'path') {
      url = url.replace(`{${name}}`, encodeURIComponent(pathValues[name] ?? String(exampleOf(doc, parameter))));
    } else if (parameter.required && parameter.in === 'query') {
      query.set(name, String(exampleOf(doc, parameter)));
    } else if (parameter.required && parameter.in === 'header') {
      headers[name] = name.toLowerCase() === 'idempotency-key' ? crypto.randomUUID() : String(exampleOf(doc, parameter));
    }
  }
  let body: unknown;
  const requestBody = operation.requestBody ? resolve(doc, operation.requestBody) : undefined;
  const multipart = (requestBody?.content as Json | undefined)?.['multipart/form-data'] as Json | undefined;
  if (multipart) {
    const example = (multipart.examples ? resolve(doc, Object.values(multipart.examples as Json)[0]).value : multipart.example) as Json | undefined;
    if (!example) throw new Error(`operation ${operationId} has no request body example`);
    const schema = resolve(doc, (multipart.schema as Json | undefined) ?? {});
    const properties = (schema.properties as Record<string, Json> | undefined) ?? {};
    const form = { fields: {} as Record<string, string>, files: {} as Record<string, Buffer> };
    for (const [name, value] of Object.entries(example)) {
      if (properties[name]?.format === 'binary') form.files[name] = TINY_PDF;
      else form.fields[name] = String(value);
    }
    const search = query.toString();
    return { method: op.method, url: `/api${url}${search ? `?${search}` : ''}`, headers, body: undefined, form };
  }
  const media = (requestBody?.content as Json | undefined)?.['application/json'] as Json | undefined;
  if (media) {
    if (media.example !== undefined) body = media.example;
    else if (media.examples) body = resolve(doc, Object.values(media.examples as Json)[0]).value;
    else throw new Error(`operation ${operationId} has no request body example`);
  }
  const search = query.toString();
  return { method: op.method, url: `/api${url}${search ? `?${search}` : ''}`, headers, body: structuredClone(body) };
}
