// Prints the per-file mutation scores of Stryker's JSON report, the survivors, the mutants
// listed as equivalent in stryker.config.mjs, then one closing line `mutation score: NN.N%`
// (Stryker's definition: killed and timed-out mutants over every mutant that was tested or
// had no test; ignored, non-compiling and listed-equivalent mutants do not count).
//
//   node scripts/mutation/score.mjs                      the last run (test-artifacts/mutation/mutation.json)
//   node scripts/mutation/score.mjs a.json b.json ...    several reports combined (`make mutation-score`:
//                                                        the per-run copies under test-artifacts/mutation/reports/)
// Combined, each mutated file is scored from the newest report (by modification time) that has it.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { EQUIVALENT_MUTANTS } from '../../stryker.config.mjs';

const print = (line) => process.stdout.write(`${line}\n`);
const reportPaths = (process.argv.length > 2 ? process.argv.slice(2) : ['test-artifacts/mutation/mutation.json']).filter((file) => fs.existsSync(file));
if (reportPaths.length === 0) {
  process.stderr.write('no mutation report yet: run `make mutation` first\n');
  process.exit(1);
}
const files = {};
const from = {};
for (const reportPath of [...reportPaths].sort((a, b) => fs.statSync(a).mtimeMs - fs.statSync(b).mtimeMs)) {
  for (const [file, result] of Object.entries(JSON.parse(fs.readFileSync(reportPath, 'utf8')).files)) {
    files[file] = result;
    from[file] = reportPath;
  }
}
const report = { files };

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);
const percent = (detected, valid) => (valid === 0 ? 'n/a' : `${((100 * detected) / valid).toFixed(1)}%`);

/** The original text of a mutant's location in its file. */
function originalOf(source, { start, end }) {
  const lines = source.split('\n');
  if (start.line === end.line) return lines[start.line - 1].slice(start.column - 1, end.column - 1);
  return [lines[start.line - 1].slice(start.column - 1), ...lines.slice(start.line, end.line - 1), lines[end.line - 1].slice(0, end.column - 1)].join('\n');
}

function equivalentEntry(file, source, mutant) {
  return EQUIVALENT_MUTANTS.find(
    (entry) =>
      entry.file === path.basename(file) &&
      entry.mutator === mutant.mutatorName &&
      entry.replacement === mutant.replacement &&
      entry.original === originalOf(source, mutant.location),
  );
}

let detectedTotal = 0;
let validTotal = 0;
const survivors = [];
const equivalents = [];
for (const [file, { source, mutants }] of Object.entries(report.files).sort(([a], [b]) => a.localeCompare(b))) {
  let detected = 0;
  let undetected = 0;
  let equivalent = 0;
  for (const mutant of mutants) {
    if (DETECTED.has(mutant.status)) detected += 1;
    if (!UNDETECTED.has(mutant.status)) continue;
    const entry = equivalentEntry(file, source, mutant);
    const where = `${file}:${mutant.location.start.line}:${mutant.location.start.column} ${mutant.mutatorName} ${JSON.stringify(originalOf(source, mutant.location))} -> ${JSON.stringify(mutant.replacement)}`;
    if (entry) {
      equivalent += 1;
      equivalents.push(`${where}: ${entry.reason}`);
    } else {
      undetected += 1;
      survivors.push(`${mutant.status === 'NoCoverage' ? 'no test reaches' : 'survived'}: ${where}`);
    }
  }
  detectedTotal += detected;
  validTotal += detected + undetected;
  const counts = (status) => mutants.filter((mutant) => mutant.status === status).length;
  const origin = reportPaths.length > 1 ? `, from ${from[file]}` : '';
  print(
    `${percent(detected, detected + undetected).padStart(7)}  ${file}  (${counts('Killed')} killed, ${counts('Timeout')} timed out, ${counts('Survived')} survived, ` +
      `${counts('NoCoverage')} no coverage; ${equivalent} of those listed equivalent${origin})`,
  );
}
for (const line of survivors) print(line);
for (const line of equivalents) print(`equivalent: ${line}`);
print(`mutation score: ${validTotal === 0 ? '0.0' : ((100 * detectedTotal) / validTotal).toFixed(1)}%`);
