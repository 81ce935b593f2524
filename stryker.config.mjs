// Mutation testing of the money and access core (`make mutation`; not part of `make test`).
// After a file moves, re-point its line in `mutate` (and its entries in `equivalentMutants`).

/** The critical core: a surviving mutant here is money or access that no test guards. */
const CRITICAL_CORE = [
  'src/modules/rail-instructions/rail-instruction-service.ts', // rail side effects delivered once committed, retried until taken
  'src/modules/rail-instructions/rail-instruction-repository.ts', // claims of rail instructions: lease and backoff
  'src/modules/ledger/money.ts', // amount parsing and formatting
  'src/modules/ledger/ledger-service.ts', // the posting path
  'src/modules/ledger/group-commit.ts', // the window timer of group commit: transfers' windows and the decision windows
  'src/http/fixed-window-counter.ts', // the health route's rate-limit counter
  'src/modules/idempotency/idempotency-service.ts',
  'src/modules/idempotency/pending-key.ts', // a key claimed in the read and completed in the apply of the one write path
  'src/modules/writes/write-path.ts', // the one write path: the decision as data, the refusals it maps
  'src/modules/writes/write-batch.ts', // a window's decisions applied in one statement: each item its outcome, a key not claimed left to the pipeline
  'src/modules/writes/decision-window.ts', // a window over an area's decider: refusals after the key's claim, a changed read or an unclaimed key run again alone, a held payout's key
  'src/modules/transfers/transfer-decision.ts', // a transfer decided in memory: its route, its refusals, its posting and row
  'src/modules/transfers/transfer-window.ts', // the transfers' windows: parties, decisions, outcomes in the transfer's words
  'src/modules/escrows/escrow-window.ts', // escrow fund and accept in windows: decisions guarded by the status read, a changed escrow run again alone and locked
  'src/modules/tontines/tontine-window.ts', // contributions in windows: one tontine's decided in turn on the state the earlier leave, guarded by the cycle's paid count
  'src/modules/escrows/escrow-commit.ts', // an escrow's decision as data: its posting, row, event, held release
  'src/modules/escrows/escrow-settlement.ts', // the escrow's posting plan: the one list of the accounts an action touches
  'src/modules/tontines/tontine-postings.ts', // the tontine's posting plan: a contribution and the pot's payout
  'src/modules/tontines/tontine-contributions.ts', // a contribution decided in memory: its rows, events and the state after it
  'src/modules/held-payouts/held-payout.ts', // a payout held for verification: held, tried again, settled once
  'src/modules/escrows/escrow-payouts.ts', // an escrow's held release: held, completed or returned whole
  'src/modules/limits/limit-policy.ts', // the tier policy file: validated before it can cap anything
  'src/modules/limits/limit-refusals.ts', // a refused limit: the payer's details, nothing of a payee's
  'src/modules/limits/limit-usage.ts', // what is used and remains of each limit, and when it resets
  'src/modules/top-ups/callback-signature.ts', // the mobile-money rail's signed callbacks: signature, age, replay
  'src/modules/top-ups/top-up-settlement.ts', // a top-up credited once, or reversed whole
  'src/modules/payouts/payout-plan.ts', // a payout's reserve and settlement postings, its threshold and who may approve it
  'src/modules/refunds/refund-settlement.ts', // a refund never above what the payment has left, held at request
  'src/modules/crypto/crypto-quote.ts', // quote arithmetic and the conversion's posting
  'src/modules/crypto/crypto-deposit-lifecycle.ts', // a deposit moves forward only and is credited once, when final
  'src/modules/crypto/crypto-deposit-hold.ts', // a final deposit over its owner's limits held, then credited once by the job
  'src/modules/crypto/crypto-addresses.ts', // address checksums: where money may be sent
  'src/modules/crypto/crypto-withdrawal-plan.ts', // a withdrawal's reserve and settlement, forward-only steps, the Travel Rule threshold
  'src/modules/crypto/crypto-organization-service.ts', // an organisation's conversions: which accounts pay and receive, verified organisations and active accounts only
  'src/modules/organizations/access-policy.ts', // the access rules
  'src/modules/organizations/organization-access-service.ts', // their enforcement
  'src/modules/network-status/network-status-service.ts',
  'src/modules/transfers/recipient.ts',
  'src/modules/payment-links/link-security.ts', // link and receipt security
  'src/domain/lifecycle.ts', // the one lifecycle engine every state machine runs on
  'src/modules/invoices/invoice-lifecycle.ts',
  'src/modules/escrows/escrow-lifecycle.ts', // the escrow state machine
  'src/modules/escrows/escrow-fee.ts', // the escrow fee and settlements
  'src/modules/tontines/tontine-lifecycle.ts', // the tontine state machine and schedule
  'src/modules/tontines/tontine-draw.ts', // the auditable random payout order
  'src/modules/api-keys/api-key-format.ts', // API key format and checksum
  'src/modules/api-keys/api-key-secret.ts', // the stored hash and its constant-time compare
  'src/modules/api-keys/api-key-scopes.ts', // what a key's scopes allow
  'src/modules/events/webhook-url-guard.ts', // the SSRF guard of webhook URLs
  'src/modules/events/webhook-signature.ts', // Standard Webhooks signatures
  'src/modules/events/webhook-schedule.ts', // the retry schedule and the disable rule
  'src/config-business-verification.ts', // production never verifies organisations by the sandbox's test numbers unless told
];

/**
 * Mutants that cannot change behaviour, each with the reason. Matched by file name, mutator,
 * the original code and its replacement (as the report shows them), so an entry survives a
 * move of its file. scripts/mutation/score.mjs leaves them out of the score and lists them;
 * the HTML report still shows them as survivors.
 */
export const EQUIVALENT_MUTANTS = [
  // tontine-draw.ts, drawBeneficiary
  {
    file: 'tontine-draw.ts',
    mutator: 'EqualityOperator',
    original: 'key < best.key',
    replacement: 'key <= best.key',
    reason: 'two keys are equal only for the same user id (SHA-256 of seed:cycle:user_id): keeping the first or the last of equal keys names the same member',
  },
  // tontine-lifecycle.ts, cancel's guard
  {
    file: 'tontine-lifecycle.ts',
    mutator: 'ConditionalExpression',
    original: "s.status === 'active'",
    replacement: 'true',
    reason: "a payout exists only in an active (or ended) tontine and cancel's from already excludes the ended ones: payoutMade is never true while forming",
  },
  // escrow-fee.ts, feeFor's minimum and cap
  {
    file: 'escrow-fee.ts',
    mutator: 'EqualityOperator',
    original: 'byRate < minimumMinor',
    replacement: 'byRate <= minimumMinor',
    reason: 'when the fee by rate equals the minimum, either branch gives the same value',
  },
  {
    file: 'escrow-fee.ts',
    mutator: 'EqualityOperator',
    original: 'floor > amountMinor',
    replacement: 'floor >= amountMinor',
    reason: 'when the fee equals the amount, capping it at the amount gives the same value',
  },
  // invoice-lifecycle.ts on the engine
  {
    file: 'invoice-lifecycle.ts',
    mutator: 'ArrayDeclaration',
    original: "['finalize', 'pay', 'mark_uncollectible', 'void', 'accept', 'cancel']",
    replacement: '[]',
    reason: 'listed only feeds the engine allowedActions, which no document path calls (invoices, quotes and credit notes show no allowed_actions)',
  },
  {
    file: 'invoice-lifecycle.ts',
    mutator: 'ArrayDeclaration',
    original: '[]',
    replacement: '["Stryker was here"]',
    reason: "the fallback of LIFECYCLE[kind][action]?.from for a 'state' refusal, which the engine gives only for an action the table has: never reached",
  },
  // lifecycle.ts
  {
    file: 'lifecycle.ts',
    mutator: 'ConditionalExpression',
    original: 'transition.by || transition.notBy',
    replacement: 'true',
    reason: 'the block only reads the parties (partiesOf is pure) and both of its checks are themselves guarded by transition.by and transition.notBy: for a transition with neither it refuses nothing',
  },
  // group-commit.ts
  {
    file: 'group-commit.ts',
    mutator: 'ConditionalExpression',
    original: 'this.timer',
    replacement: 'true',
    reason: 'clearTimeout(undefined) does nothing and the timer is already undefined: the guard only skips a no-op',
  },
  {
    file: 'group-commit.ts',
    mutator: 'ConditionalExpression',
    original: 'this.queue.length > 0',
    replacement: 'true',
    reason: 'flush() with an empty queue sends nothing (its loop runs zero times) and only clears a timer, which exists only while items wait',
  },
  {
    file: 'group-commit.ts',
    mutator: 'EqualityOperator',
    original: 'this.queue.length > 0',
    replacement: 'this.queue.length >= 0',
    reason: 'as above: an extra flush() of an empty queue sends nothing',
  },
  {
    file: 'group-commit.ts',
    mutator: 'StringLiteral',
    original: '`a batch of ${batch.length} answered ${outcomes.length} outcomes`',
    replacement: '``',
    reason: 'the error is caught at once in send() and never reaches anyone: only its throw matters (the batch is run again item by item)',
  },
  // money.ts, shift(): `BigInt('')` is 0n, and a point exactly at either end of the digits
  // gives the same split whichever branch takes it.
  {
    file: 'money.ts',
    mutator: 'EqualityOperator',
    original: 'point <= 0',
    replacement: 'point < 0',
    reason: "at point 0 the last branch returns int '' (digits.slice(0, 0)) and the same frac; parseAmount reads int + frac with BigInt, and BigInt('' + f) equals BigInt('0' + f)",
  },
  {
    file: 'money.ts',
    mutator: 'StringLiteral',
    original: "'0'",
    replacement: '""',
    reason: "the integer part only ever reaches BigInt(int + frac): BigInt('' + f) equals BigInt('0' + f), and BigInt('') is 0n",
  },
  {
    file: 'money.ts',
    mutator: 'EqualityOperator',
    original: 'point >= digits.length',
    replacement: 'point > digits.length',
    reason: "at point === digits.length the last branch returns digits.slice(0, point) = digits and digits.slice(point) = '', what this branch returns (digits + '0'.repeat(0), '')",
  },
  {
    file: 'money.ts',
    mutator: 'ConditionalExpression',
    original: 'text.length === 0',
    replacement: 'false',
    reason: "an empty (or all-blank) string then matches neither DECIMAL nor SCIENTIFIC and is refused further down with the very same field and message ('must be a decimal number such as \"12.50\"')",
  },
  // recipient.ts
  {
    file: 'recipient.ts',
    mutator: 'Regex',
    original: '/^\\+[1-9][0-9]{6,14}$/',
    replacement: '/\\+[1-9][0-9]{6,14}$/',
    reason: 'E164 is only tried on text that already matched /^\\+[0-9]+$/: its one plus sign is the first character, so the pattern can only match from there, anchored or not',
  },
  // tontine-draw.ts, drawOrder's comparator `(a.key < b.key ? -1 : a.key > b.key ? 1 : 0)`: the keys
  // are SHA-256 digests of distinct member ids, never equal, and V8's Array.prototype.sort
  // (TimSort) only asks whether the comparator's result is negative, so 1 or 0 for
  // a.key > b.key sort alike.
  ...[
    ['EqualityOperator', 'a.key < b.key', 'a.key <= b.key', 'differs from < only for equal keys, and two members never have equal keys'],
    ['ConditionalExpression', 'a.key > b.key', 'true', 'reached only when a.key >= b.key, which for distinct keys is a.key > b.key: the same 1'],
    ['ConditionalExpression', 'a.key > b.key', 'false', 'turns the 1 for a.key > b.key into 0; the sort only tests for a negative result, so the order is the same'],
    ['EqualityOperator', 'a.key > b.key', 'a.key >= b.key', 'differs from > only for equal keys, and two members never have equal keys'],
    ['EqualityOperator', 'a.key > b.key', 'a.key <= b.key', 'turns the 1 for a.key > b.key into 0 (keys are distinct); the sort only tests for a negative result'],
  ].map(([mutator, original, replacement, reason]) => ({ file: 'tontine-draw.ts', mutator, original, replacement, reason })),
  // idempotency-service.ts, canonicalJson's sort of an object's entries by key
  // `(a < b ? -1 : a > b ? 1 : 0)`: an object's keys are distinct, so the same two reasons as
  // the draw's comparator above hold.
  ...[
    ['EqualityOperator', 'a < b', 'a <= b', "differs from < only for equal keys, and one object's keys are never equal"],
    ['ConditionalExpression', 'a > b', 'true', 'reached only when a >= b, which for distinct keys is a > b: the same 1'],
    ['ConditionalExpression', 'a > b', 'false', 'turns the 1 for a > b into 0; the sort only tests for a negative result, so the order is the same'],
    ['EqualityOperator', 'a > b', 'a >= b', "differs from > only for equal keys, and one object's keys are never equal"],
    ['EqualityOperator', 'a > b', 'a <= b', 'turns the 1 for a > b into 0 (keys are distinct); the sort only tests for a negative result'],
  ].map(([mutator, original, replacement, reason]) => ({ file: 'idempotency-service.ts', mutator, original, replacement, reason })),
  // idempotency-service.ts, describe() and reused(): whether a key "produced" a resource is
  // `status === 'completed' && resourceType && resourceId`. Every claim, fresh or taken over,
  // writes the resource columns NULL (FRESH_CLAIM in idempotency-repository.ts), and a completed
  // key always has both (CHECK idempotency_keys_completed_has_response): the status and the two
  // columns always agree, so dropping or loosening one of the three conditions answers the same.
  ...[
    ['ConditionalExpression', "record.status === 'completed'", 'true', 'an in-progress key has no resource type, so the condition is false anyway'],
    [
      'LogicalOperator',
      "record.status === 'completed' && record.resourceType && record.resourceId",
      "record.status === 'completed' && record.resourceType || record.resourceId",
      'a completed key has both columns and an in-progress key neither, so both forms give the same truth value',
    ],
    ['ConditionalExpression', "record.status === 'completed' && record.resourceType", 'true', 'the remaining record.resourceId is set exactly when the key is completed'],
    [
      'LogicalOperator',
      "record.status === 'completed' && record.resourceType",
      "record.status === 'completed' || record.resourceType",
      'an in-progress key has no resource type, so || gives what && gives',
    ],
  ].map(([mutator, original, replacement, reason]) => ({ file: 'idempotency-service.ts', mutator, original, replacement, reason })),
  // limit-usage.ts, limitsView: both clamps give 0n at the boundary whichever branch takes it.
  {
    file: 'limit-usage.ts',
    mutator: 'EqualityOperator',
    original: 'usedOf[limit] < 0n',
    replacement: 'usedOf[limit] <= 0n',
    reason: 'at exactly 0n the clamp returns 0n and usedOf[limit] is 0n: the same used amount',
  },
  {
    file: 'limit-usage.ts',
    mutator: 'EqualityOperator',
    original: 'remaining > 0n',
    replacement: 'remaining >= 0n',
    reason: 'at exactly 0n both branches give 0n: the same remaining amount',
  },
  // escrow-payouts.ts, heldSettlement
  {
    file: 'escrow-payouts.ts',
    mutator: 'ConditionalExpression',
    original: "escrow.resolutionOutcome === 'split'",
    replacement: 'true',
    reason: "the ruling records a seller amount only for a split (resolutionPlan answers null for release and refund): resolutionSellerAmountMinor !== null already implies the split",
  },
  // escrow-payouts.ts, settledBuyerShare: a buyer's share is held only when the seller or the fee
  // was paid (heldBuyerShare refuses a settlement with toSellerMinor + feeMinor <= 0n), and
  // paidBeforeBuyerShare hands those amounts to the lifecycle, whose settled() answers 'released'
  // for any outcome that pays the seller or the fee: the share's completion and return are always
  // 'released'.
  ...[
    ['ConditionalExpression', "status === 'released'", 'true', "the status is always 'released' here: the same releasedAt"],
    ['ObjectLiteral', '{ refundedAt: now }', '{}', "the status is always 'released' here: the refundedAt branch is never taken"],
  ].map(([mutator, original, replacement, reason]) => ({ file: 'escrow-payouts.ts', mutator, original, replacement, reason })),
  // transfer-decision.ts, routeOf
  {
    file: 'transfer-decision.ts',
    mutator: 'ConditionalExpression',
    original: "identifier.kind === 'phone'",
    replacement: 'true',
    reason: "with rail mobile_money parseIdentifier only ever answers a phone (it refuses an e-mail or an IBAN on that rail), and an IBAN has already returned the line before",
  },
  // refund-settlement.ts, refundAmount's refusal
  {
    file: 'refund-settlement.ts',
    mutator: 'EqualityOperator',
    original: 'refundable > 0n',
    replacement: 'refundable >= 0n',
    reason: 'at exactly 0n both branches report 0n as the refundable amount',
  },
  // crypto-quote.ts, quoteAmounts' refusal: the fee reaches the whole amount only when nothing
  // is converted, which `amounts.toAmountMinor <= 0n` before it already refuses (from `from`:
  // to = (from - fee) * num / den <= 0; from `to`: fee = from - converted >= from only when
  // converted = ceil(to * den / num) <= 0, i.e. to <= 0).
  ...[
    ['ConditionalExpression', 'amounts.feeMinor >= amounts.fromAmountMinor', 'false'],
    ['EqualityOperator', 'amounts.feeMinor >= amounts.fromAmountMinor', 'amounts.feeMinor > amounts.fromAmountMinor'],
  ].map(([mutator, original, replacement]) => ({ file: 'crypto-quote.ts', mutator, original, replacement, reason: 'a fee of the whole amount converts nothing: the toAmountMinor <= 0n half of the condition refuses it already' })),
  // crypto-addresses.ts, otherFormat
  {
    file: 'crypto-addresses.ts',
    mutator: 'ConditionalExpression',
    original: 'other !== format',
    replacement: 'true',
    reason: "otherFormat is asked only about an address its own format has just refused (solanaCheck: not 32 bytes), so isValidAddress(format, address) is false for the format itself",
  },
  // crypto-addresses.ts, isValidAddress for EVM
  {
    file: 'crypto-addresses.ts',
    mutator: 'Regex',
    original: '/^0x[0-9a-fA-F]{40}$/',
    replacement: '/0x[0-9a-fA-F]{40}$/',
    reason: "the check goes on to require eip55(bytes) === address, and eip55 always writes '0x' first: an address with anything before its 0x never passes either way",
  },
  // config-business-verification.ts
  {
    file: 'config-business-verification.ts',
    mutator: 'StringLiteral',
    original: "', '",
    replacement: '""',
    reason: 'BUSINESS_VERIFICATION_PROVIDERS has one provider: the join writes no separator either way',
  },
  // api-key-format.ts, redactApiKeys: the includes() is only a shortcut before the replace
  {
    file: 'api-key-format.ts',
    mutator: 'StringLiteral',
    original: "'sk_'",
    replacement: '""',
    reason: "includes('') is always true, so the replace always runs: its pattern needs sk_ itself, and a text without it comes back unchanged",
  },
  // api-key-scopes.ts, scopeGrants
  {
    file: 'api-key-scopes.ts',
    mutator: 'ConditionalExpression',
    original: "need.level === 'read'",
    replacement: 'true',
    reason: "a level other than read or write was refused two lines above; for a write, have.level === 'write' is the have.level === need.level just before it",
  },
  // decision-window.ts, RunAlone: the refusal a decision that threw something other than a
  // DomainError is sent as; answer() recognises it by its class and runs the request alone.
  {
    file: 'decision-window.ts',
    mutator: 'StringLiteral',
    original: "'the request runs alone'",
    replacement: '""',
    reason: 'the RunAlone error never reaches anyone: write_apply_batch hands it back to answer(), which runs the request alone on seeing its class; its message is read nowhere',
  },
  // escrow-window.ts, readEscrows
  {
    file: 'escrow-window.ts',
    mutator: 'MethodExpression',
    original: 'id.toLowerCase()',
    replacement: 'id.toUpperCase()',
    reason: "the ids (already checked to be UUIDs) only reach PostgreSQL as uuid[], which reads a uuid in either case; the rows are keyed by their stored id, and one case or the other folds duplicates alike",
  },
  // tontine-window.ts, the window's decider: a refusal that is no DomainError is sent as
  // RunAlone (decision-window.ts, itemDecided), so these messages never reach anyone.
  ...[
    ['StringLiteral', "'a contribution after the window completed its cycle runs alone'", '""'],
    ['StringLiteral', "'a contribution refused on the window state runs alone'", '""'],
  ].map(([mutator, original, replacement]) => ({
    file: 'tontine-window.ts',
    mutator,
    original,
    replacement,
    reason: 'a refusal other than a DomainError is replaced by RunAlone before write_apply_batch and the request runs alone: this message is read nowhere',
  })),
  // tontine-window.ts, readContributions: the pairs reach PostgreSQL only as uuid[], read in
  // either case; p.reader comes back as a uuid, in lower case; `wanted` is keyed only to fold a
  // pair asked twice, which one case or the other folds alike.
  ...[
    ['pair.tontineId.toLowerCase()', 'pair.tontineId.toUpperCase()'],
    ['pair.userId.toLowerCase()', 'pair.userId.toUpperCase()'],
  ].map(([original, replacement]) => ({
    file: 'tontine-window.ts',
    mutator: 'MethodExpression',
    original,
    replacement,
    reason: "the ids only reach PostgreSQL as uuid[] (either case reads the same uuid), and the read's rows are keyed by the ids PostgreSQL answers, not by these",
  })),
  // organization-access-service.ts
  {
    file: 'organization-access-service.ts',
    mutator: 'MethodExpression',
    original: 'organizationId.toLowerCase()',
    replacement: 'organizationId.toUpperCase()',
    reason: "the id (already checked to be a UUID) is compared with organizations.id, a uuid column: PostgreSQL reads a uuid literal in either case, so the case never changes which row matches, and the answer carries the stored id",
  },
];

export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  // Which tests run is chosen there (MUTATION_TESTS narrows it), not with Stryker's
  // `testFiles`: with `testFiles`, Stryker 9.6.1 activates mutants in code that runs at import
  // too late and reports them as survivors (https://github.com/stryker-mutator/stryker-js/issues/6144).
  vitest: { configFile: 'vitest.mutation.config.mts' },
  checkers: ['typescript'],
  // The checker compiles the application only (src and generated): faster per mutant.
  tsconfigFile: 'tsconfig.mutation.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  // The machine is shared: one test runner, one checker.
  concurrency: 1,
  timeoutMS: 20_000,
  // The first run starts the database and runs every test once: slow on a busy machine.
  dryRunTimeoutMinutes: 30,
  mutate: CRITICAL_CORE,
  plugins: ['@stryker-mutator/vitest-runner', '@stryker-mutator/typescript-checker'],
  reporters: ['html', 'json', 'clear-text', 'progress'],
  htmlReporter: { fileName: 'test-artifacts/mutation/index.html' },
  jsonReporter: { fileName: 'test-artifacts/mutation/mutation.json' },
  incrementalFile: 'test-artifacts/mutation/incremental.json',
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
