import fc from 'fast-check';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOpenApiDocument } from '../../src/http/openapi-document';
import { buildTestApp, type App } from './app';
import { startCpuMeter } from './cpu-meter';
import { contractOperations, type ContractOperation } from './contract-requests';
import { databaseKind, testKnex } from './database';
import { accessTokenFor, bearer, createMember, createOrganization, createUser } from './factories';
import { invalidValueFor, resolveRef, valueFor } from './schema-arbitrary';

/**
 * Requests generated from the bundled contract, for every operation: parameters and bodies
 * valid and invalid, sent by every role (anonymous, a user of no organisation, a platform
 * administrator, and each role of an organisation). Whatever arrives, the API answers no 5xx and no
 * status the operation does not document; the app validates every JSON body it sends against
 * the contract (a mismatch would become a 500). Fixed seed; FUZZ_RUNS requests per operation
 * (a few in `make test`, many in `make fuzz`).
 *
 * The operations are split into shards, one test file each (test/contract/contract-fuzz-*),
 * so that vitest runs them in parallel workers on PostgreSQL (both cores); each shard has its
 * own app, organisation and callers. At the end each shard prints how many requests it sent
 * and the CPU they took (this process, which is the test and the app, plus its database
 * backends): on a shared machine CPU per request says more than wall time.
 * FUZZ_CPU_REPORT=1 adds CPU per request by operation; FUZZ_CPU_PROFILE=<file> writes a V8
 * CPU profile of the requests (the shard's number is appended to the name).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 3);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);

type Json = Record<string, unknown>;
const doc = loadOpenApiDocument().parse() as Json;

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

/** The operations of shard `shard` (0-based) of `shards`: every shards-th one, in contract order. */
export function fuzzOperations(shard: number, shards: number): ContractOperation[] {
  return contractOperations().filter((_, index) => index % shards === shard);
}

interface Reply {
  status: number;
  text: string;
}

/**
 * One request over a kept-alive connection to the test's own server (supertest would open a
 * connection per request and build a superagent request around it: at 10^5 requests, a
 * good part of the run's CPU).
 */
function send(agent: http.Agent, port: number, method: string, path: string, headers: Record<string, string>, body: string | undefined): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const outgoing: Record<string, string | number> = { ...headers };
    if (body !== undefined) {
      outgoing['Content-Type'] = 'application/json';
      outgoing['Content-Length'] = Buffer.byteLength(body);
    }
    const req = http.request({ agent, host: '127.0.0.1', port, method: method.toUpperCase(), path, headers: outgoing }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export function describeContractFuzz(shard: number, shards: number): void {
  let app: App;
  /** One listening server for every request of the shard. */
  let server: http.Server;
  let port: number;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let orgId: string;
  const callers: Record<string, Record<string, string>> = {};
  let meter: Awaited<ReturnType<typeof startCpuMeter>>;
  let requests = 0;
  /** CPU milliseconds of this process per operation, for FUZZ_CPU_REPORT. */
  const cpuByOperation: Array<[string, number]> = [];

  beforeAll(async () => {
    app = await buildTestApp();
    server = http.createServer(app);
    // The client keeps its connection between requests; the server must not close it first.
    server.keepAliveTimeout = 120_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    const org = await createOrganization();
    orgId = org.id;
    callers.anonymous = {};
    callers.user = bearer(await accessTokenFor(app, await createUser()));
    callers.platformAdmin = bearer(await accessTokenFor(app, await createUser({ isAdmin: true })));
    for (const role of ['owner', 'admin', 'finance_manager', 'representative', 'director', 'cashier'] as const) callers[role] = bearer(await accessTokenFor(app, await createMember(org, role)));
    meter = await startCpuMeter(testKnex(), databaseKind(), process.env.FUZZ_CPU_PROFILE && `${process.env.FUZZ_CPU_PROFILE.replace(/\.cpuprofile$/, '')}-${shard + 1}.cpuprofile`);
  });

  afterAll(async () => {
    const { processMs, databaseMs, wallMs } = await meter.stop();
    const perRequest = (ms: number) => (ms / Math.max(requests, 1)).toFixed(2);
    console.log(
      `fuzz shard ${shard + 1}/${shards}: ${requests} requests in ${(wallMs / 1000).toFixed(1)} s wall; CPU ${(processMs / 1000).toFixed(1)} s in this process (tests + app${databaseKind() === 'embedded' ? ' + embedded database' : ''}) + ${(databaseMs / 1000).toFixed(1)} s in its database backends = ${perRequest(processMs)} + ${perRequest(databaseMs)} ms per request`,
    );
    if (process.env.FUZZ_CPU_REPORT) console.log(cpuByOperation.sort((a, b) => b[1] - a[1]).map(([id, ms]) => `${id} ${(ms / RUNS).toFixed(2)} ms/request`).join('\n'));
    agent.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  describe(`contract fuzzer, shard ${shard + 1} of ${shards}`, () => {
    for (const operation of fuzzOperations(shard, shards)) {
      it(`${operation.operationId}: no 5xx, no undocumented status (${RUNS} generated requests)`, { timeout: 1_200_000 }, async () => {
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

        let checked = 0;
        const cpuBefore = process.cpuUsage();
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...Object.keys(callers)), pathValues, optionalParameters, body, extraQuery, async (role, pathParams, others, payload, extra) => {
            let url = `/api${operation.path}`;
            for (const [name, value] of Object.entries(pathParams)) url = url.replace(`{${name}}`, encodeURIComponent(value as string));
            const query = new URLSearchParams();
            // Closing an account ends its caller for good: each close gets an account of its own.
            const closing = operation.operationId === 'closeAccount' && role !== 'anonymous';
            const headers: Record<string, string> = closing ? bearer(await accessTokenFor(app, await createUser())) : { ...callers[role] };
            for (const parameter of parameters) {
              const value = others[parameter.name] as string | undefined;
              if (value === undefined) continue;
              if (parameter.in === 'query') query.set(parameter.name, value);
              else if (parameter.in === 'header' && /^[\x20-\x7E]*$/.test(value)) headers[parameter.name] = value;
            }
            const search = [query.toString(), extra].filter(Boolean).join('&');
            const res = await send(agent, port, operation.method, `${url}${search ? `?${search}` : ''}`, headers, payload === undefined ? undefined : JSON.stringify(payload));
            requests += 1;
            checked += 1;
            // Both checks on every request; the message (and vitest's assertion machinery) is
            // only built for a request that breaks one.
            if (res.status >= 500 || !documented.includes(String(res.status))) {
              const described = `${operation.method.toUpperCase()} ${url}?${search} as ${role} with ${text(payload)?.slice(0, 300)} -> ${res.status} ${res.text.slice(0, 300)}`;
              expect(res.status, described).toBeLessThan(500);
              expect(documented, described).toContain(String(res.status));
            }
          }),
          { seed: SEED, numRuns: RUNS, endOnFailure: true },
        );
        const cpu = process.cpuUsage(cpuBefore);
        cpuByOperation.push([operation.operationId, (cpu.user + cpu.system) / 1000]);
        expect(checked, 'every generated request was sent and checked').toBe(RUNS);
      });
    }
  });
}
