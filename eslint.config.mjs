import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** A module is reached only through its index.ts: `modules/<area>/<file>` from outside is a deep import. */
const DEEP_MODULE_IMPORT = {
  regex: '(^|/)modules/[^/]+/.+',
  message: "Import the module's public face (src/modules/<area>/index.ts), not a file inside it.",
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'clients/typescript/dist/**', 'clients/typescript/src/openapi-types.ts', 'generated/**', 'coverage/**', 'test-artifacts/**', '.data/**', '.stryker-tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-require-imports': 'off',
      'no-console': 'error',
      'no-restricted-imports': ['error', { patterns: [DEEP_MODULE_IMPORT] }],
    },
  },
  {
    // Inside a module: its own files freely; another module only through its index; never HTTP;
    // the contract through src/contract, never generated/, so the contract has one entry point.
    files: ['src/modules/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'express', message: 'Modules know nothing of HTTP: handlers are plain functions (src/contract).' }],
          patterns: [
            { regex: '^\\.\\./[^./][^/]*/.+', message: "Import another module's public face (../<area>), not a file inside it." },
            { regex: '(^|/)http(/|$)', message: 'Modules know nothing of HTTP: src/http/ mounts them, not the other way round.' },
            { regex: '(^|/)generated(/|$)', message: 'Modules see the contract through src/contract (its types and operations), not generated/ directly.' },
          ],
        },
      ],
    },
  },
  {
    // The database layer is the ground floor: it serves modules and knows none of them.
    files: ['src/db/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '(^|/)(modules|services|handlers|http|seed)(/|$)', message: 'src/db/ imports nothing from the layers above it.' }] },
      ],
    },
  },
  {
    // One way to do each thing. An e-mail pattern lives only in the auth module's
    // identifier parser (parsePartyIdentifier), and the Idempotency-Key is checked only by the
    // HTTP pipeline (src/http/mount-operations.ts): a service never validates a key.
    files: ['src/**/*.ts'],
    ignores: ['src/modules/auth/identifier.ts', 'src/http/mount-operations.ts', 'src/modules/idempotency/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Literal[regex.pattern=/s@/]',
          message: 'Parse e-mail addresses and telephone numbers with parsePartyIdentifier (src/modules/auth), the one identifier parser.',
        },
        {
          selector: "ImportSpecifier[imported.name='validateIdempotencyKey'], CallExpression[callee.name='validateIdempotencyKey']",
          message: 'Only the pipeline (src/http/mount-operations.ts) checks an Idempotency-Key: declare the header in the contract instead.',
        },
      ],
    },
  },
  {
    files: ['src/http/mount-operations.ts', 'src/modules/idempotency/**'],
    rules: { 'no-restricted-syntax': ['error', {
          selector: 'Literal[regex.pattern=/s@/]',
          message: 'Parse e-mail addresses and telephone numbers with parsePartyIdentifier (src/modules/auth), the one identifier parser.',
        }] },
  },
  {
    // Exceptions, each on purpose (tests that prove what no public face can show):
    // - pay-page.test.ts spies on PaymentsRepository's prototype to prove that a GET of the
    //   payment page writes nothing, and slows one of its writes to test a graceful shutdown.
    // - invoice-numbering.test.ts takes a number (InvoiceRepository.nextNumber) in a
    //   transaction it then aborts, to prove the counter rolls back: no operation fails on demand
    //   between numbering and commit.
    // - ledger-guards.test.ts and idempotency-exact.test.ts make a claim or an account slip away
    //   between two statements of a repository, which no operation does on demand.
    // - link-security.test.ts pins the pure token and code rules of the payment page (the
    //   mutation-tested core), which the module's face rightly does not export; likewise the
    //   escrow state machine's nextStatus and the tontine draw's newDrawSeed (escrow-domain.test.ts,
    //   tontine-draw.test.ts), and the escrow's pure posting plan (escrow-posting-plan.test.ts);
    //   the key the one write path claims and its hand-over (pending-key.test.ts), and the
    //   escrow resolution's plan, which reads its currency under the lock (write-path.test.ts);
    //   the tontine's pure posting plan and contribution decision, with the rows they take
    //   (tontine-posting-plan.test.ts, tontine-contribution-decision.test.ts); an escrow's held
    //   release, held, completed or returned (held-payout.test.ts); the escrow and tontine
    //   windows' deciders over a read that fails, which no operation makes fail on demand, and a
    //   contribution id that names nothing (escrow-window.test.ts, tontine-window.test.ts).
    files: [
      'test/api/pay-page.test.ts',
      'test/integration/invoice-numbering.test.ts',
      'test/integration/ledger-guards.test.ts',
      'test/integration/idempotency-exact.test.ts',
      'test/unit/link-security.test.ts',
      'test/unit/escrow-domain.test.ts',
      'test/unit/escrow-posting-plan.test.ts',
      'test/unit/pending-key.test.ts',
      'test/integration/write-path.test.ts',
      'test/unit/tontine-draw.test.ts',
      'test/unit/tontine-posting-plan.test.ts',
      'test/unit/tontine-contribution-decision.test.ts',
      'test/unit/held-payout.test.ts',
      'test/integration/escrow-window.test.ts',
      'test/integration/tontine-window.test.ts',
    ],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    // Small rooms: no source file over 400 lines (counted as they stand) and no function
    // over 80 lines of code (blank and comment lines not counted: a function is not made shorter
    // by deleting its explanation). Migrations are history, never edited, so they are aside, as
    // generated/ is (ignored above). Tests and scripts are not held to it: a describe() callback is
    // one function to ESLint, and a test file groups every rule of one area; the bench and drill
    // scripts read top to bottom as the runbooks they are.
    files: ['src/**/*.ts'],
    ignores: ['src/db/migrations/**'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  {
    // One data-access shape: a repository maps rows one way, `(await query) as Row[]`
    // then a typed `toX(row)`; no `as never` to quiet knex's types. (A rule of its own, not
    // no-restricted-syntax: a later block's no-restricted-syntax would replace the src/** one.)
    files: ['src/modules/**/*-repository.ts'],
    rules: {
      '@typescript-eslint/no-restricted-types': ['error', { types: { never: 'No `never` in a repository (above all no `as never`): read rows as `(await query) as Row[]` and map them with a typed toX(row).' } }],
    },
  },
  {
    files: ['scripts/**', 'test/**', 'clients/typescript/src/examples/**', 'clients/typescript/scripts/**'],
    rules: { 'no-console': 'off' },
  },
);
