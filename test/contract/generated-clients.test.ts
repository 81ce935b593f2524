import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * A partner team generates a client from the published contract and codes the demo journey
 * against it. With two generators (openapi-typescript, swagger-typescript-api), the journey
 * must type-check without casts into `data` or `details`: every response is a concrete type
 * and each error with details has its own, reached by narrowing on `error`.
 */
const ROOT = path.resolve(__dirname, '../..');
const BIN = path.join(ROOT, 'node_modules/.bin');
const BUNDLE = path.join(ROOT, 'generated/openapi.bundled.json');
const JOURNEY = fs.readFileSync(path.join(__dirname, 'client-journey.ts.txt'), 'utf8');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'generated-clients-'));

afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** How each generator names the response types the journey reads. */
const GENERATORS: Record<string, { generate: (dir: string) => void; types: Record<string, string> }> = {
  'openapi-typescript': {
    generate: (dir) => execFileSync(path.join(BIN, 'openapi-typescript'), [BUNDLE, '-o', path.join(dir, 'generated.ts')], { cwd: dir, stdio: 'pipe' }),
    types: {
      LOGIN_RESPONSE: "Api.components['schemas']['LoginResponse']",
      ME_RESPONSE: "Api.components['schemas']['MeResponse']",
      TRANSFER_RESPONSE: "Api.paths['/transfers']['post']['responses'][200]['content']['application/json']",
      TRANSFER_LIST_RESPONSE: "Api.paths['/transfers']['get']['responses'][200]['content']['application/json']",
      TRANSFER_422: "Api.paths['/transfers']['post']['responses'][422]['content']['application/json']",
      TRANSFER_409: "Api.components['schemas']['IdempotencyConflictError']",
    },
  },
  'swagger-typescript-api': {
    generate: (dir) =>
      execFileSync(path.join(BIN, 'swagger-typescript-api'), ['generate', '--path', BUNDLE, '--output', dir, '--name', 'generated.ts', '--no-client', '--silent'], { cwd: dir, stdio: 'pipe' }),
    types: {
      LOGIN_RESPONSE: 'Api.LoginResponse',
      ME_RESPONSE: 'Api.MeResponse',
      TRANSFER_RESPONSE: 'Api.TransferResponse',
      TRANSFER_LIST_RESPONSE: 'Api.TransferListResponse',
      TRANSFER_422: 'Api.TransferUnprocessableError',
      TRANSFER_409: 'Api.IdempotencyConflictError',
    },
  },
};

describe('clients generated from the contract', () => {
  for (const [name, generator] of Object.entries(GENERATORS)) {
    it(`${name}: the demo journey type-checks with concrete response and error types`, { timeout: 180_000 }, () => {
      const dir = path.join(work, name);
      fs.mkdirSync(dir, { recursive: true });
      generator.generate(dir);
      fs.writeFileSync(path.join(dir, 'client-types.ts'), "export * from './generated';\n");
      let journey = JOURNEY;
      for (const [placeholder, type] of Object.entries(generator.types)) journey = journey.replaceAll(placeholder, type);
      fs.writeFileSync(path.join(dir, 'journey.ts'), journey);
      fs.writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM'], types: [], skipLibCheck: false, noUnusedLocals: false },
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
