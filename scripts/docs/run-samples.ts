/**
 * Runs every operation's `x-codeSamples` (curl, then the TypeScript client) from the bundled
 * contract against a running service (`API_URL`, e.g. `make run` through
 * scripts/with-make-run.sh), exactly as written in the bundle:
 *   - `$TOKEN` is a session of the demo owner (of the platform administrator for `/admin/...`
 *     and resolveEscrow; of the escrow's seller for its seller's actions; of the verification
 *     session's owner for its session; a session of its own for logout); `$API` is the base URL;
 *   - each path parameter's variable (`$ORG_ID`, `$ESCROW_ID`...) is an id of the demo data or
 *     of something made on the way (scripts/docs/sample-fixtures.ts); a parameter whose schema
 *     lists its values gets the first; a parameter with no value fails its samples;
 *   - reads run first, then writes, deletions, and logout last.
 * A sample passes when its answer's status is documented for the operation, is not 5xx, and
 * its JSON body conforms to the schema documented for that status, and when it is not refused
 * as a request (400, 401, 403: a body or parameter the contract refuses, no valid credentials,
 * a caller not allowed) unless EXPECTED_REFUSALS names that answer for the operation; the
 * TypeScript samples must also compile (tsc, strict) against the client's types first. The
 * last line says `samples: N passed, M failed`; any failure exits 1.
 *
 *   API_URL=http://127.0.0.1:8080/api npx tsx scripts/docs/run-samples.ts   (or `make samples`)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { METHODS, variableFor } from './code-samples';
import { fixtures, login, type Fixtures } from './sample-fixtures';

type Json = Record<string, unknown>;
interface Sample {
  lang: string;
  label: string;
  source: string;
}
interface Operation {
  operationId: string;
  method: string;
  path: string;
  pointer: string;
  responses: Record<string, unknown>;
  samples: Sample[];
  /** The values of path parameters whose schema lists them. */
  enums: Record<string, string[]>;
}
interface Answer {
  status: number;
  contentType: string;
  body: string;
}

const ROOT = path.resolve(__dirname, '../..');
const API = (process.env.API_URL ?? process.env.API ?? '').replace(/\/$/, '');
if (!API) {
  console.error('API_URL is not set: run through scripts/with-make-run.sh (make samples)');
  process.exit(2);
}
const doc = JSON.parse(fs.readFileSync(path.join(ROOT, 'generated/openapi.bundled.json'), 'utf8')) as Json;
const escapePointer = (part: string): string => part.replace(/~/g, '~0').replace(/\//g, '~1');

function at(pointer: string): Json {
  return pointer
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, key) => (node as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc) as Json;
}

function operations(): Operation[] {
  const found: Operation[] = [];
  for (const [route, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      const enums: Record<string, string[]> = {};
      for (const raw of [...((item.parameters ?? []) as Json[]), ...((operation.parameters ?? []) as Json[])]) {
        const parameter = typeof raw.$ref === 'string' ? at(raw.$ref) : raw;
        const schema = parameter.schema as Json | undefined;
        const resolved = schema && typeof schema.$ref === 'string' ? at(schema.$ref) : schema;
        if (parameter.in === 'path' && Array.isArray(resolved?.enum)) enums[parameter.name as string] = resolved.enum as string[];
      }
      found.push({
        enums,
        operationId: operation.operationId as string,
        method,
        path: route,
        pointer: `#/paths/${escapePointer(route)}/${method}`,
        responses: operation.responses as Record<string, unknown>,
        samples: (operation['x-codeSamples'] ?? []) as Sample[],
      });
    }
  }
  return found;
}

// --- conformance -------------------------------------------------------------------------------
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
addFormats(ajv);
ajv.addSchema(doc, 'contract');

/**
 * The operations whose samples are expected to be refused, each with the answer (and, for a
 * 400, the one field refused) and why no sample written from the contract can do better. Any
 * other 400, 401 or 403 fails.
 */
const EXPECTED_REFUSALS: Record<string, { status: number; error: string; field?: string; why: string }> = {
  refreshSession: {
    status: 401,
    error: 'InvalidRefreshToken',
    why: 'the sample sends the example refresh token: a real one is known only to the session that got it, and refreshing it retires it',
  },
  receiveMobileMoneyCallback: {
    status: 401,
    error: 'InvalidSignature',
    why: "a rail signs its callback with the rail's secret over the body and the time of sending: a sample written once carries no valid signature",
  },
  createPaymentLink: {
    status: 400,
    error: 'ValidationError',
    field: 'body.destination_account_id',
    why: "the body's example names an account of the example organisation; the demo's accounts get fresh ids at every seed",
  },
  getOrCreateCheckout: {
    status: 400,
    error: 'ValidationError',
    field: 'body.destination_account_id',
    why: "the body's example names an account of the example organisation; the demo's accounts get fresh ids at every seed",
  },
};
const REFUSALS = new Set([400, 401, 403]);

/** The envelope's error name and the fields its details name. */
function refusal(body: string): { error?: string; fields: string[] } {
  try {
    const envelope = JSON.parse(body) as Json;
    const details = Array.isArray(envelope.details) ? (envelope.details as Json[]) : [];
    return { error: envelope.error as string | undefined, fields: details.map((issue) => String(issue.field)) };
  } catch {
    return { fields: [] };
  }
}

/** Problems with an answer: 5xx, a refusal not expected, an undocumented status, or a JSON body that does not conform. */
function check(operation: Operation, answer: Answer): string[] {
  if (answer.status >= 500) return [`answered ${answer.status} (5xx): ${answer.body.slice(0, 300)}`];
  if (REFUSALS.has(answer.status)) {
    const expected = EXPECTED_REFUSALS[operation.operationId];
    const { error, fields } = refusal(answer.body);
    const fieldExpected = expected?.field === undefined || (fields.length > 0 && fields.every((field) => field === expected.field));
    if (expected?.status !== answer.status || expected.error !== error || !fieldExpected) {
      return [`refused: ${answer.status} ${error ?? ''} ${fields.join(', ')} (not expected of this operation): ${answer.body.slice(0, 300)}`];
    }
  }
  const key = String(answer.status) in operation.responses ? String(answer.status) : 'default' in operation.responses ? 'default' : undefined;
  if (!key) return [`status ${answer.status} is not documented (documented: ${Object.keys(operation.responses).join(', ')}): ${answer.body.slice(0, 300)}`];
  let pointer = `${operation.pointer}/responses/${key}`;
  const response = at(pointer);
  if (typeof response.$ref === 'string') pointer = response.$ref;
  const content = (at(pointer).content ?? {}) as Record<string, Json>;
  if (!answer.contentType.includes('json')) {
    return Object.keys(content).length === 0 || Object.keys(content).some((type) => !type.includes('json')) ? [] : [`a ${answer.contentType} answer where JSON is documented`];
  }
  if (!content['application/json']?.schema) return [];
  const validate = ajv.getSchema(`contract${pointer}/content/application~1json/schema`) ?? ajv.compile({ $ref: `contract${pointer}/content/application~1json/schema` });
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return ['a body that is not JSON'];
  }
  return validate(body) ? [] : [`the body does not conform: ${ajv.errorsText(validate.errors)}: ${answer.body.slice(0, 300)}`];
}

/** Operations outside /admin/ that only a platform administrator takes. */
const PLATFORM_ADMINISTRATOR_OPERATIONS = new Set(['resolveEscrow']);

/** The environment of one sample: API, TOKEN and a value for each of its path parameters. */
async function environmentFor(operation: Operation, data: Fixtures, fallbacks: string[]): Promise<Record<string, string>> {
  const env: Record<string, string> = {
    API,
    TOKEN: data.tokens[operation.operationId] ?? (operation.path.startsWith('/admin/') || PLATFORM_ADMINISTRATOR_OPERATIONS.has(operation.operationId) ? data.admin : data.owner),
  };
  if (operation.operationId === 'logout') env.TOKEN = await login('owner@demo.example');
  for (const [, name] of operation.path.matchAll(/\{([^}]+)\}/g)) {
    const variable = variableFor(name as string);
    const override = data.overrides[operation.operationId];
    const value = override && variable in override ? override[variable] : (data.values[variable] ?? operation.enums[name as string]?.[0]);
    if (value) env[variable] = value;
    else {
      env[variable] = crypto.randomUUID();
      fallbacks.push(`${operation.operationId}: ${variable}`);
    }
  }
  return env;
}

// --- running the samples -----------------------------------------------------------------------
function runCurl(source: string, env: Record<string, string>, dir: string): Answer {
  const files = { body: path.join(dir, 'body'), headers: path.join(dir, 'headers'), status: path.join(dir, 'status') };
  for (const file of Object.values(files)) fs.rmSync(file, { force: true });
  // The sample as written; curl is wrapped to keep the answer's status, headers and body.
  const script = `set -euo pipefail\ncurl() { command curl -o ${JSON.stringify(files.body)} -D ${JSON.stringify(files.headers)} -w '%{http_code}' "$@" > ${JSON.stringify(files.status)}; }\n${source}\n`;
  const run = spawnSync('bash', ['-c', script], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) return { status: 0, contentType: '', body: `the sample exited ${run.status}: ${run.stderr}` };
  const headers = fs.existsSync(files.headers) ? fs.readFileSync(files.headers, 'utf8') : '';
  return {
    status: Number(fs.readFileSync(files.status, 'utf8').trim()),
    contentType: /^content-type:\s*(.*)$/im.exec(headers)?.[1]?.trim() ?? '',
    body: fs.existsSync(files.body) ? fs.readFileSync(files.body, 'utf8') : '',
  };
}

let recorded: Answer | undefined;
const realFetch = globalThis.fetch;

/** The TypeScript client records the last answer it got through the global fetch. */
function recordAnswers(): void {
  globalThis.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    const copy = response.clone();
    recorded = { status: response.status, contentType: response.headers.get('content-type') ?? '', body: await copy.text() };
    return response;
  };
}

async function runTypeScript(source: string, env: Record<string, string>, file: string): Promise<Answer> {
  fs.writeFileSync(file, source);
  const saved = { ...process.env };
  Object.assign(process.env, env);
  const log = console.log;
  console.log = () => undefined;
  recorded = undefined;
  try {
    await import(pathToFileURL(file).href);
  } catch (error) {
    return { status: 0, contentType: '', body: `the sample threw: ${(error as Error).stack ?? String(error)}` };
  } finally {
    console.log = log;
    for (const name of Object.keys(env)) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  }
  return recorded ?? { status: 0, contentType: '', body: 'the sample made no request' };
}

/** A directory where `@fintech-platform/client` resolves to clients/typescript (built if needed). */
function clientWorkspace(): string {
  const client = path.join(ROOT, 'clients/typescript');
  if (!fs.existsSync(path.join(client, 'dist/index.js'))) {
    if (!fs.existsSync(path.join(client, 'node_modules/.package-lock.json'))) execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: client, stdio: 'inherit' });
    execFileSync('npm', ['run', 'build'], { cwd: client, stdio: 'inherit' });
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'code-samples-'));
  fs.mkdirSync(path.join(dir, 'node_modules/@fintech-platform'), { recursive: true });
  fs.symlinkSync(client, path.join(dir, 'node_modules/@fintech-platform/client'));
  return dir;
}

/**
 * Type-checks every TypeScript sample against the built client's declarations (strict, as a
 * partner's project would), one tsc run over all of them. Returns the files with errors and
 * the compiler's lines about each.
 */
function typeCheck(dir: string, files: string[]): Map<string, string[]> {
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['ES2022', 'DOM'], types: ['node'], typeRoots: [path.join(ROOT, 'node_modules/@types')], strict: true, noEmit: true, skipLibCheck: true },
      files: files.map((file) => path.basename(file)),
    }),
  );
  const run = spawnSync(path.join(ROOT, 'node_modules/.bin/tsc'), ['-p', dir], { cwd: dir, encoding: 'utf8', maxBuffer: 64 << 20 });
  const errors = new Map<string, string[]>();
  let current: string | undefined;
  for (const line of `${run.stdout}\n${run.stderr}`.split('\n')) {
    const match = /^([^(\s]+\.mts)\(/.exec(line);
    // A diagnostic names its file; its indented lines that follow belong to it.
    if (match) current = path.basename(match[1] as string);
    else if (!/^\s/.test(line)) current = line.trim() && run.status !== 0 ? '(tsc)' : undefined;
    if (current && line.trim()) errors.set(current, [...(errors.get(current) ?? []), line.trim()]);
  }
  if (run.status !== 0 && errors.size === 0) errors.set('(tsc)', [`tsc exited ${run.status}`]);
  return errors;
}

const ORDER: Record<string, number> = { get: 0, put: 1, patch: 1, post: 1, delete: 2 };

async function main(): Promise<number> {
  const all = operations();
  const data = await fixtures();
  const dir = clientWorkspace();
  recordAnswers();
  const ordered = [...all].sort((a, b) => (a.operationId === 'logout' ? 1 : 0) - (b.operationId === 'logout' ? 1 : 0) || (ORDER[a.method] ?? 1) - (ORDER[b.method] ?? 1));
  let passed = 0;
  const failures: string[] = [];
  const fallbacks: string[] = [];
  const statuses = new Map<string, number>();
  try {
    const sources = new Map<Operation, string>();
    for (const operation of ordered) {
      const sample = operation.samples.find((candidate) => candidate.lang === 'TypeScript');
      if (!sample) continue;
      const file = path.join(dir, `${operation.operationId}.mts`);
      fs.writeFileSync(file, sample.source);
      sources.set(operation, file);
    }
    const compileErrors = typeCheck(dir, [...sources.values()]);
    for (const line of compileErrors.get('(tsc)') ?? []) failures.push(`the TypeScript samples do not compile: ${line}`);
    for (const operation of ordered) {
      const languages = new Set(operation.samples.map((sample) => sample.lang));
      for (const lang of ['Shell', 'TypeScript']) {
        if (!languages.has(lang)) failures.push(`${operation.operationId}: no ${lang} sample in x-codeSamples (run make generate)`);
      }
      for (const sample of operation.samples) {
        const before = fallbacks.length;
        const env = await environmentFor(operation, data, fallbacks);
        const missing = fallbacks.slice(before);
        const compiled = sample.lang === 'TypeScript' ? compileErrors.get(`${operation.operationId}.mts`) : undefined;
        const answer = sample.lang === 'Shell' ? runCurl(sample.source, env, dir) : await runTypeScript(sample.source, env, path.join(dir, `${operation.operationId}-${crypto.randomUUID().slice(0, 8)}.mts`));
        const problems = missing.length > 0 ? [`no demo value for ${missing.join(', ')} (a random id meets a 404): make one in scripts/docs/sample-fixtures.ts`] : compiled ? [`does not compile: ${compiled.join(' | ')}`] : answer.status === 0 ? [answer.body] : check(operation, answer);
        const label = `${operation.method.toUpperCase()} ${operation.path} (${operation.operationId}) ${sample.label}`;
        if (problems.length === 0) {
          passed += 1;
          statuses.set(String(answer.status), (statuses.get(String(answer.status)) ?? 0) + 1);
          console.log(`ok   ${answer.status} ${label}`);
        } else {
          failures.push(`${label}: ${problems.join('; ')}`);
          console.log(`FAIL ${answer.status} ${label}\n     ${problems.join('\n     ')}`);
        }
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const unique = [...new Set(fallbacks)];
  if (unique.length > 0) console.log(`path parameters with no demo value: ${unique.join(', ')}`);
  console.log(`answers by status: ${[...statuses.entries()].sort().map(([status, count]) => `${status}: ${count}`).join(', ')}`);
  console.log(`${all.length} operations, ${passed + failures.length} samples`);
  console.log(`samples: ${passed} passed, ${failures.length} failed`);
  return failures.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
