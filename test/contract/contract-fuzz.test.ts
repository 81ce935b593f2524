import fc from 'fast-check';
import request from 'supertest';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/app';
import { loadOpenApiDocument } from '../../src/http/openapi-document';
import { buildTestApp } from '../support/app';
import { contractOperations } from '../support/contract-requests';
import { accessTokenFor, bearer, createMember, createOrganization, createUser } from '../support/factories';
import { invalidValueFor, resolveRef, valueFor } from '../support/schema-arbitrary';

/**
 * Requests generated from the bundled contract, for every operation: parameters and bodies
 * valid and invalid, sent by every role (anonymous, a user of no organisation, a platform
 * administrator, and each role of an organisation). Whatever arrives, the API answers no 5xx and no
 * status the operation does not document; the app validates every JSON body it sends against
 * the contract (a mismatch would become a 500). Fixed seed; FUZZ_RUNS requests per operation
 * (a few in `make test`, many in `make fuzz`).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 3);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);

type Json = Record<string, unknown>;
const doc = loadOpenApiDocument().parse() as Json;

let app: App;
/** One listening server for every request (supertest would start and stop one per request: at 10^5 requests, minutes). */
let server: http.Server;
let orgId: string;
const callers: Record<string, Record<string, string>> = {};

beforeAll(async () => {
  app = await buildTestApp();
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const org = await createOrganization();
  orgId = org.id;
  callers.anonymous = {};
  callers.user = bearer(await accessTokenFor(app, await createUser()));
  callers.platformAdmin = bearer(await accessTokenFor(app, await createUser({ isAdmin: true })));
  for (const role of ['owner', 'admin', 'finance_manager', 'representative', 'director', 'cashier'] as const) callers[role] = bearer(await accessTokenFor(app, await createMember(org, role)));
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: unknown;
}

function parametersOf(path: string, method: string): Parameter[] {
  const item = (doc.paths as Json)[path] as Json;
  const operation = item[method] as Json;
  return [...((item.parameters as unknown[]) ?? []), ...((operation.parameters as unknown[]) ?? [])].map((p) => resolveRef(doc, p) as unknown as Parameter);
}

function bodySchemaOf(path: string, method: string): unknown {
  const operation = ((doc.paths as Json)[path] as Json)[method] as Json;
  const body = operation.requestBody ? resolveRef(doc, operation.requestBody) : undefined;
  return ((body?.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema;
}

function documentedStatuses(path: string, method: string): string[] {
  return Object.keys((((doc.paths as Json)[path] as Json)[method] as Json).responses as Json);
}

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

describe('contract fuzzer', () => {
  for (const operation of contractOperations()) {
    it(`${operation.operationId}: no 5xx, no undocumented status (${RUNS} generated requests)`, { timeout: 600_000 }, async () => {
      const parameters = parametersOf(operation.path, operation.method);
      const bodySchema = bodySchemaOf(operation.path, operation.method);
      const documented = documentedStatuses(operation.path, operation.method);

      const pathValues = fc.record(
        Object.fromEntries(
          parameters
            .filter((p) => p.in === 'path')
            .map((p) => [p.name, p.name === 'orgId' ? fc.constantFrom(orgId, orgId, '00000000-0000-4000-8000-000000000000', 'not-a-uuid') : fc.oneof(valueFor(doc, p.schema).map(text), fc.constantFrom('x', '..', '%00'))]),
        ),
      );
      const optionalParameters = fc.record(
        Object.fromEntries(
          parameters.filter((p) => p.in !== 'path').map((p) => [p.name, fc.option(fc.oneof({ weight: 4, arbitrary: valueFor(doc, p.schema).map(text) }, { weight: 1, arbitrary: fc.constantFrom('', '-1', 'x'.repeat(300)) }), { nil: undefined, freq: p.required ? 8 : 2 })]),
        ),
      );
      const body = bodySchema ? fc.oneof({ weight: 3, arbitrary: valueFor(doc, bodySchema) }, { weight: 2, arbitrary: invalidValueFor(doc, bodySchema) }) : fc.constant(undefined);
      const extraQuery = fc.option(fc.constantFrom('unknown_param=1', 'limit=abc', 'starting_after=%ZZ'), { nil: undefined, freq: 4 });

      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...Object.keys(callers)), pathValues, optionalParameters, body, extraQuery, async (role, pathParams, others, payload, extra) => {
          let url = `/api${operation.path}`;
          for (const [name, value] of Object.entries(pathParams)) url = url.replace(`{${name}}`, encodeURIComponent(value as string));
          const query = new URLSearchParams();
          const headers: Record<string, string> = { ...callers[role] };
          for (const parameter of parameters) {
            const value = others[parameter.name] as string | undefined;
            if (value === undefined) continue;
            if (parameter.in === 'query') query.set(parameter.name, value);
            else if (parameter.in === 'header' && /^[\x20-\x7E]*$/.test(value)) headers[parameter.name] = value;
          }
          const search = [query.toString(), extra].filter(Boolean).join('&');
          let call = request(server)[operation.method](`${url}${search ? `?${search}` : ''}`).set(headers);
          if (payload !== undefined) call = call.set('Content-Type', 'application/json').send(JSON.stringify(payload));
          const res = await call;
          const described = `${operation.method.toUpperCase()} ${url}?${search} as ${role} with ${text(payload)?.slice(0, 300)} -> ${res.status} ${res.text.slice(0, 300)}`;
          expect(res.status, described).toBeLessThan(500);
          expect(documented, described).toContain(String(res.status));
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    });
  }
});
