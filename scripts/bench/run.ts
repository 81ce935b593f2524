/**
 * `make bench`: runs every benchmark under scripts/bench/ one after the other and prints
 * their JSON. BENCH_ONLY=health,transfers runs a subset.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const benches = fs
  .readdirSync(__dirname)
  .filter((file) => file.endsWith('.ts') && !['run.ts', 'bench-support.ts'].includes(file))
  .map((file) => file.replace(/\.ts$/, ''))
  .filter((name) => !only || only.includes(name))
  .sort();

let failed = 0;
for (const name of benches) {
  process.stdout.write(`\n### ${name}\n`);
  const taskset = fs.existsSync('/usr/bin/taskset') ? ['taskset', '-c', '1'] : [];
  const [command, ...args] = [...taskset, 'node_modules/.bin/tsx', path.join('scripts/bench', `${name}.ts`)];
  const result = spawnSync(command as string, args, { stdio: 'inherit', env: process.env });
  if (result.status !== 0) failed += 1;
}
process.exit(failed ? 1 : 0);
