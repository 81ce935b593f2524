import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { browserSkippedNotice } from './browser';

/** How many of the slowest files the summary names (where a run's time goes). */
const SLOWEST_FILES = 12;

/**
 * CI reads the last line of the run: `N passed, N failed, N skipped`. Before it, the slowest
 * files (setup, import and tests), so a run that got slower shows where.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const skippedBrowserFiles: string[] = [];
    for (const module of testModules) {
      let failedHere = 0;
      const browserFile = /[\\/]test[\\/]browser[\\/]/.test(module.moduleId);
      if (browserFile && [...module.children.allTests()].every((test) => test.result().state === 'skipped')) {
        skippedBrowserFiles.push(path.relative(process.cwd(), module.moduleId));
      }
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failedHere += 1;
        else skipped += 1;
      }
      // A file that failed to load, or whose hooks failed, is a failure even with no failed test.
      if (module.state() === 'failed' && failedHere === 0) failedHere = 1;
      failed += failedHere;
    }
    failed += unhandledErrors.length;
    const timed = testModules.map((module) => {
      const diagnostic = module.diagnostic();
      return { file: path.relative(process.cwd(), module.moduleId), ms: diagnostic.setupDuration + diagnostic.collectDuration + diagnostic.duration };
    });
    const slowest = timed.sort((a, b) => b.ms - a.ms).slice(0, SLOWEST_FILES);
    if (slowest.length) process.stdout.write(`\nslowest files:\n${slowest.map(({ file, ms }) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`).join('\n')}\n`);
    if (skippedBrowserFiles.length) process.stdout.write(`\n${browserSkippedNotice(skippedBrowserFiles)}\n`);
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
