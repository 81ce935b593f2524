import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * A partner team generates a client from the published contract and codes the demo journey
 * against it. With each common generator (openapi-typescript, @hey-api/openapi-ts,
 * swagger-typescript-api, openapi-zod-client), the journey (login, me, wallets, transfer, and
 * the typed errors of invoices, network status, escrows and tontines; and a server's journey
 * with an API key: create it, then read a payment with it) must type-check without
 * casts into `data` or `details`: every response is a concrete type (the journey's
 * `@ts-expect-error` lines on wrong field accesses would be unused under `any`, which fails
 * the compile) and each error with details has its own, reached by narrowing on `error`.
 */
const ROOT = path.resolve(__dirname, '../..');
const BIN = path.join(ROOT, 'node_modules/.bin');
const BUNDLE = path.join(ROOT, 'generated/openapi.bundled.json');
const JOURNEY = fs.readFileSync(path.join(__dirname, 'client-journey.ts.txt'), 'utf8');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'generated-clients-'));

afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** The schema names (components.schemas) the journey reads, by placeholder. */
const SCHEMAS: Record<string, string> = {
  LOGIN_RESPONSE: 'LoginResponse',
  ME_RESPONSE: 'MeResponse',
  WALLET_LIST_RESPONSE: 'WalletListResponse',
  TRANSFER_RESPONSE: 'TransferResponse',
  TRANSFER_LIST_RESPONSE: 'TransferListResponse',
  TRANSFER_422: 'TransferUnprocessableError',
  TRANSFER_409: 'IdempotencyConflictError',
  INVOICE_409: 'DocumentConflictError',
  INVOICE_422: 'DocumentUnprocessableError',
  NETWORK_STATUS_422: 'NetworkStatusUnprocessableError',
  ESCROW_422: 'EscrowUnprocessableError',
  ESCROW_409: 'EscrowActionConflictError',
  TONTINE_409: 'TontineConflictError',
  // The server journey with an API key.
  API_KEY_SECRET_RESPONSE: 'ApiKeySecretResponse',
  PAYMENT_RESPONSE: 'PaymentResponse',
  BUSINESS_403: 'BusinessForbiddenError',
};

/** Every placeholder as `Api.<schema name>`: each generator's client-types.ts exports those names. */
const BY_NAME = Object.fromEntries(Object.entries(SCHEMAS).map(([placeholder, name]) => [placeholder, `Api.${name}`]));

function version(pkg: string): string {
  return (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
}

interface Generator {
  package: string;
  generate: (dir: string) => void;
  /** client-types.ts: re-exports the generated types under the journey's names. */
  clientTypes: string;
  types: Record<string, string>;
  /** Module paths the generated code imports (openapi-zod-client imports zod). */
  paths?: Record<string, string[]>;
}

/** How each generator is run, and how its types are reached. */
const GENERATORS: Record<string, Generator> = {
  'openapi-typescript': {
    package: 'openapi-typescript',
    generate: (dir) => execFileSync(path.join(BIN, 'openapi-typescript'), [BUNDLE, '-o', path.join(dir, 'generated.ts')], { cwd: dir, stdio: 'pipe' }),
    clientTypes: "export * from './generated';\n",
    types: {
      ...Object.fromEntries(Object.entries(SCHEMAS).map(([placeholder, name]) => [placeholder, `Api.components['schemas']['${name}']`])),
      // Reached through the operations too, as a client of `paths` would.
      TRANSFER_RESPONSE: "Api.paths['/transfers']['post']['responses'][200]['content']['application/json']",
      TRANSFER_LIST_RESPONSE: "Api.paths['/transfers']['get']['responses'][200]['content']['application/json']",
      TRANSFER_422: "Api.paths['/transfers']['post']['responses'][422]['content']['application/json']",
      INVOICE_409: "Api.paths['/business/organizations/{orgId}/invoices/{invoiceId}/pay']['post']['responses'][409]['content']['application/json']",
      NETWORK_STATUS_422: "Api.paths['/business/organizations/{orgId}/network-status']['patch']['responses'][422]['content']['application/json']",
      PAYMENT_RESPONSE: "Api.paths['/business/organizations/{orgId}/payments/{paymentId}']['get']['responses'][200]['content']['application/json']",
      BUSINESS_403: "Api.paths['/business/organizations/{orgId}/payments/{paymentId}']['get']['responses'][403]['content']['application/json']",
    },
  },
  '@hey-api/openapi-ts': {
    package: '@hey-api/openapi-ts',
    generate: (dir) =>
      execFileSync(path.join(BIN, 'openapi-ts'), ['-i', BUNDLE, '-o', path.join(dir, 'generated'), '-p', '@hey-api/typescript'], {
        cwd: dir,
        stdio: 'pipe',
        env: { ...process.env, NO_COLOR: '1' },
      }),
    clientTypes: "export * from './generated/index';\n",
    types: BY_NAME,
  },
  'swagger-typescript-api': {
    package: 'swagger-typescript-api',
    generate: (dir) =>
      execFileSync(path.join(BIN, 'swagger-typescript-api'), ['generate', '--path', BUNDLE, '--output', dir, '--name', 'generated.ts', '--no-client', '--silent'], { cwd: dir, stdio: 'pipe' }),
    clientTypes: "export * from './generated';\n",
    types: BY_NAME,
  },
  'openapi-zod-client': {
    package: 'openapi-zod-client',
    // The schemas-only template: zod schemas of components.schemas (no zodios client); the
    // journey's types are what the schemas parse to (z.infer).
    generate: (dir) =>
      execFileSync(
        path.join(BIN, 'openapi-zod-client'),
        [BUNDLE, '-o', path.join(dir, 'generated.ts'), '--export-schemas', '-t', path.join(ROOT, 'node_modules/openapi-zod-client/src/templates/schemas-only.hbs')],
        { cwd: dir, stdio: 'pipe' },
      ),
    clientTypes: [
      "import type { z } from 'zod';",
      "import type { schemas } from './generated';",
      ...Object.values(SCHEMAS).map((name) => `export type ${name} = z.infer<typeof schemas.${name}>;`),
      '',
    ].join('\n'),
    types: BY_NAME,
    // The zod the generator is written for (3.x, its own dependency), not the project's.
    paths: { zod: [path.join(ROOT, 'node_modules/openapi-zod-client/node_modules/zod')] },
  },
};

describe('clients generated from the contract', () => {
  for (const [name, generator] of Object.entries(GENERATORS)) {
    it(`${name} ${version(generator.package)}: the demo journey type-checks with concrete response and error types`, { timeout: 180_000 }, () => {
      const dir = path.join(work, name);
      fs.mkdirSync(dir, { recursive: true });
      generator.generate(dir);
      fs.writeFileSync(path.join(dir, 'client-types.ts'), generator.clientTypes);
      let journey = JOURNEY;
      for (const [placeholder, type] of Object.entries(generator.types)) journey = journey.replaceAll(placeholder, type);
      fs.writeFileSync(path.join(dir, 'journey.ts'), journey);
      fs.writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM'], types: [], skipLibCheck: false, noUnusedLocals: false, ...(generator.paths ? { paths: generator.paths } : {}) },
          files: ['journey.ts'],
        }),
      );
      let output = '';
      try {
        execFileSync(path.join(BIN, 'tsc'), ['-p', path.join(dir, 'tsconfig.json')], { cwd: dir, stdio: 'pipe' });
      } catch (error) {
        output = String((error as { stdout?: Buffer }).stdout ?? error);
      }
      expect(output).toBe('');
    });
  }
});
