import express, { type ErrorRequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import request from 'supertest';
import { expect } from 'vitest';
import { loadOpenApiDocument } from '../../src/http/openapi-document';

interface CapturedResponse {
  status: number;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

interface HeaderSpec {
  schema?: { type?: string; minimum?: number; maximum?: number };
  $ref?: string;
}

function resolve<T>(document: Record<string, unknown>, node: T & { $ref?: string }): T {
  if (!node.$ref) return node;
  const target = node.$ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((at, key) => (at as Record<string, unknown>)[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  return resolve(document, target as T & { $ref?: string });
}

/**
 * Checks a response against the contract, for routes that answer ahead of the validator
 * (GET /api/health): the status must be documented, every documented header that the
 * response carries must match its schema, and the body is replayed through
 * express-openapi-validator with response validation on (a mismatch becomes a 500), against
 * the schema documented for the response's status.
 * Returns the headers the contract documents for that status.
 */
export async function expectResponseMatchesContract(method: 'get' | 'post', path: string, res: CapturedResponse): Promise<string[]> {
  const document = loadOpenApiDocument().parse();
  const paths = document.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  const operation = paths[path]?.[method];
  expect(operation, `${method.toUpperCase()} ${path} is in the contract`).toBeDefined();
  const documented = operation?.responses[String(res.status)];
  expect(documented, `status ${res.status} of ${method.toUpperCase()} ${path} is documented`).toBeDefined();
  const response = resolve(document, documented as { headers?: Record<string, HeaderSpec> });
  const headerNames = Object.keys(response.headers ?? {});
  for (const name of headerNames) {
    const value = res.headers[name.toLowerCase()];
    if (value === undefined) continue;
    const schema = resolve(document, (response.headers as Record<string, HeaderSpec>)[name] as HeaderSpec).schema;
    if (schema?.type === 'integer') {
      expect(String(value), `${name} is an integer`).toMatch(/^\d+$/);
      if (schema.minimum !== undefined) expect(Number(value)).toBeGreaterThanOrEqual(schema.minimum);
      if (schema.maximum !== undefined) expect(Number(value)).toBeLessThanOrEqual(schema.maximum);
    }
  }

  // The validator never checks 5xx bodies (its response hook skips them), so the replay
  // serves this status's documented response as the operation's only one, under 200.
  const replayDocument = loadOpenApiDocument().parse();
  const replayOperation = (replayDocument.paths as typeof paths)[path]?.[method];
  if (replayOperation) replayOperation.responses = { '200': replayOperation.responses[String(res.status)] };
  const replay = express();
  replay.use(
    OpenApiValidator.middleware({
      apiSpec: replayDocument as never,
      validateRequests: false,
      validateResponses: true,
      validateSecurity: false,
      ignoreUndocumented: true,
    }),
  );
  replay[method](`/api${path}`, (_req, out) => {
    out.status(200).json(res.body);
  });
  const reportErrors: ErrorRequestHandler = (err: { status?: number; message?: string }, _req, out, _next) => {
    out.status(err.status ?? 500).json({ contractError: err.message });
  };
  replay.use(reportErrors);
  const replayed = await request(replay)[method](`/api${path}`);
  expect(replayed.body, 'the body matches the contract').toEqual(res.body);
  expect(replayed.status).toBe(200);
  return headerNames;
}
