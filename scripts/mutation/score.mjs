// Prints the per-file mutation scores of Stryker's JSON report, then one closing line
// `mutation score: NN.N%` (Stryker's definition: killed and timed-out mutants over every
// mutant that was tested or had no test; ignored and non-compiling mutants do not count).
import fs from 'node:fs';
import process from 'node:process';

const print = (line) => process.stdout.write(`${line}\n`);

const reportPath = process.argv[2] ?? 'test-artifacts/mutation/mutation.json';
const report = JSON.parse(fs.readFileSync(reportPath, 'utf8'));

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);
const percent = (detected, valid) => (valid === 0 ? 'n/a' : `${((100 * detected) / valid).toFixed(1)}%`);

let detectedTotal = 0;
let validTotal = 0;
for (const [file, { mutants }] of Object.entries(report.files).sort(([a], [b]) => a.localeCompare(b))) {
  const count = (statuses) => mutants.filter((mutant) => statuses.has(mutant.status)).length;
  const detected = count(DETECTED);
  const undetected = count(UNDETECTED);
  const ignored = count(new Set(['Ignored']));
  detectedTotal += detected;
  validTotal += detected + undetected;
  print(`${percent(detected, detected + undetected).padStart(7)}  ${file}  (${detected} detected, ${undetected} undetected, ${ignored} ignored)`);
}
print(`mutation score: ${validTotal === 0 ? '0.0' : ((100 * detectedTotal) / validTotal).toFixed(1)}%`);
