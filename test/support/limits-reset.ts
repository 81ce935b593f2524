import { afterAll } from 'vitest';
import { LimitsService } from '../../src/modules/limits';
import { databaseKind, testKnex } from './database';

/**
 * A setup file, so the hook is registered in every test file. On the embedded back-end the files
 * share one database: a file that installed the shipped tier limits (a test of the limits, or
 * services booted with their default policy) would leave them to the files after it, whose
 * users are funded far above tier_0's caps. After such a file the unbounded policy is back.
 *
 * The policies are imported here, not at the file's top: loading them reads and parses the
 * shipped policy file, and a mutant of that parser (`make mutation`) must fail the tests that
 * check it, not stop every test file from loading (which Stryker counts as a survivor).
 */
afterAll(async () => {
  if (databaseKind() !== 'embedded') return;
  const { UNBOUNDED_LIMIT_POLICY } = await import('./limits');
  const knex = testKnex();
  const installed = (await knex('limit_policies').first('version')) as { version: string } | undefined;
  if (installed && installed.version !== UNBOUNDED_LIMIT_POLICY.version) await new LimitsService({ knex, policy: UNBOUNDED_LIMIT_POLICY }).install();
});
