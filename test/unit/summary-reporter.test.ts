import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TestModule } from 'vitest/node';
import SummaryReporter from '../support/summary-reporter';

function fakeModule(moduleId: string, states: string[], timings = { setupDuration: 0, collectDuration: 0, duration: 0 }): TestModule {
  return {
    moduleId,
    diagnostic: () => timings,
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

  it('names the slowest files, slowest first, each with its setup, import and tests, before the counts line', () => {
    const slow = fakeModule(path.join(root, 'test/api/slow.test.ts'), ['passed'], { setupDuration: 1_000, collectDuration: 2_000, duration: 9_500 });
    const quick = fakeModule(path.join(root, 'test/unit/quick.test.ts'), ['passed'], { setupDuration: 100, collectDuration: 200, duration: 300 });
    const out = report([quick, slow]);
    const listed = out.slice(out.indexOf('slowest files:')).split('\n').slice(1, 3).map((line) => line.trim());
    expect(listed).toEqual(['12.5 s  test/api/slow.test.ts', '0.6 s  test/unit/quick.test.ts']);
    expect(out.trimEnd().split('\n').at(-1)).toBe('2 passed, 0 failed, 0 skipped');
  });

  it('names at most twelve files', () => {
    const modules = Array.from({ length: 15 }, (_, i) => fakeModule(path.join(root, `test/unit/f${i}.test.ts`), ['passed'], { setupDuration: 0, collectDuration: 0, duration: i * 1_000 }));
    const out = report(modules);
    const listed = out.slice(out.indexOf('slowest files:')).split('\n').filter((line) => line.includes(' s  test/'));
    expect(listed).toHaveLength(12);
    expect(listed[0]).toContain('f14.test.ts');
  });

  it('CI requires the browser journey', () => {
    expect(fs.readFileSync(path.join(root, '.ci/run'), 'utf8')).toMatch(/^export REQUIRE_BROWSER_TESTS=1$/m);
  });
});
