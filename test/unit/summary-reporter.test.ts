import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TestModule } from 'vitest/node';
import SummaryReporter from '../support/summary-reporter';

function fakeModule(moduleId: string, states: string[]): TestModule {
  return {
    moduleId,
    state: () => (states.includes('failed') ? 'failed' : 'passed'),
    children: { allTests: () => states.map((state) => ({ result: () => ({ state }) }))[Symbol.iterator]() },
  } as unknown as TestModule;
}

function report(modules: TestModule[]): string {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    new SummaryReporter().onTestRunEnd(modules, []);
  } finally {
    spy.mockRestore();
  }
  return out;
}

afterEach(() => vi.restoreAllMocks());

describe('the run summary', () => {
  const root = process.cwd();
  const browserFile = path.join(root, 'test/browser/checkout-payment.browser.test.ts');

  it('says plainly that a skipped browser journey did not run, and how to run it, before the counts line', () => {
    const out = report([fakeModule(path.join(root, 'test/api/me.test.ts'), ['passed', 'passed']), fakeModule(browserFile, ['skipped'])]);
    expect(out).toContain('the browser journey did NOT run (test/browser/checkout-payment.browser.test.ts)');
    expect(out).toMatch(/apt-get install -y chromium/);
    expect(out).toMatch(/REQUIRE_BROWSER_TESTS=1/);
    expect(out.trimEnd().split('\n').at(-1)).toBe('2 passed, 0 failed, 1 skipped');
  });

  it('says nothing about the browser when the journey ran', () => {
    const out = report([fakeModule(browserFile, ['passed'])]);
    expect(out).not.toContain('did NOT run');
    expect(out.trimEnd().split('\n').at(-1)).toBe('1 passed, 0 failed, 0 skipped');
  });

  it('CI requires the browser journey', () => {
    expect(fs.readFileSync(path.join(root, '.ci/run'), 'utf8')).toMatch(/^export REQUIRE_BROWSER_TESTS=1$/m);
  });
});
