// The client's types are the contract's: copy generated/openapi.d.ts (make generate) into the
// package, as a .ts module so that tsc ships it in dist/ with the rest.
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
copyFileSync(join(here, '../../../generated/openapi.d.ts'), join(here, '../src/openapi-types.ts'));
