import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { systemClock, type Clock } from './clock';
import type { Config } from './config';
import { CONTRACT_VERSION } from './contract';
import { AccountService } from './modules/accounts';
import { DocumentService } from './modules/documents';
import { PiiCipher } from './pii-cipher';
import { cryptoServices } from './modules/crypto';
import { IdentityService, SandboxIdentityProvider } from './modules/identity';
import { ApiKeyService } from './modules/api-keys';
import { EscrowService, escrowStatusOf } from './modules/escrows';
import { HeldPayoutService } from './modules/held-payouts';
import { EventsService, WebhookService } from './modules/events';
import { AccessCheck, AuthService, PasswordHasher, SessionService, TokenService } from './modules/auth';
import { HealthService } from './modules/health';
import { IdempotencyService } from './modules/idempotency';
import { InvoiceService } from './modules/invoices';
import { LimitsService, loadLimitPolicy, type LimitPolicy } from './modules/limits';
import { NetworkStatusService } from './modules/network-status';
import { OutboxService, SandboxNotifier, type Notifier } from './modules/notifications';
import { CodeHasher, PasswordService, SignupService } from './modules/onboarding';
import { businessVerificationProvider, OrganizationAccessService, OrganizationService, VerificationService } from './modules/organizations';
import { PaymentLinksService, PaymentPageService, PaymentsService, findPaymentView } from './modules/payment-links';
import { PayoutService, SandboxPayoutRail, payoutStatusOf } from './modules/payouts';
import { RefundService, SandboxRefundRail, refundStatusOf } from './modules/refunds';
import { CONTRIBUTION_RESOURCE, TontineService, contributionStatusOf } from './modules/tontines';
import { SandboxRail, TransferService, transferStatusOf } from './modules/transfers';
import { SandboxMobileMoneyRail, TopUpService, topUpStatusOf } from './modules/top-ups';
import { RailInstructionService } from './modules/rail-instructions';
import { WalletService } from './modules/wallets';
import { StreamBudget } from './stream-budget';

/** Retry-After of a refused statement download: a stream usually ends within seconds. */
const STREAM_RETRY_AFTER_SECONDS = 5;

export interface ServiceDeps {
  config: Config;
  knex: Knex;
  logger: Logger;
  redis?: Redis;
  /** The clock of every service (tests inject one); the system clock when absent. */
  now?: Clock;
  /**
   * The tier limits, or the file to read them from (validated here: a malformed file stops the
   * start); src/modules/limits/tier-policy.json when absent. ready() writes them to the database.
   */
  limitPolicy?: LimitPolicy | string;
}

/**
 * The composition of every service, built once by whoever starts the process (src/main.ts, the
 * seed script, the test support, the bench) and handed to createApp and the jobs: one place to
 * see what depends on what. Every link between services is made here, explicitly: no service
 * registers itself with another in its constructor, and no module keeps a registry of its own.
 */
export function buildServices(deps: ServiceDeps) {
  const core = coreServices(deps);
  const clock = deps.now ?? systemClock;
  // Crypto: over the network simulator and the sandbox rates (CRYPTO_NETWORK=sandbox).
  const cryptoModule = cryptoServices({ knex: deps.knex, config: deps.config.crypto, clock, notifier: core.notifier });
  // Payouts held for verification (an escrow's release, a tontine's pot, a crypto deposit's credit): completed by a job, or returned by an administrator, on their area's write path.
  const heldPayouts = new HeldPayoutService({
    knex: deps.knex,
    clock,
    logger: deps.logger,
    subjects: { escrow: core.escrows, tontine: core.tontines, crypto_deposit: cryptoModule.cryptoDeposits },
  });
  return { ...core, heldPayouts, ...cryptoModule };
}

/** Every service but crypto's (see buildServices). */
function coreServices(deps: ServiceDeps) {
  const { config, knex, redis } = deps;
  const clock = deps.now ?? systemClock;
  const tokens = new TokenService(config.jwt);
  const sessions = new SessionService(knex, tokens, clock);
  const passwords = new PasswordHasher();
  const organizationAccess = new OrganizationAccessService(knex);
  const accounts = new AccountService(knex, {
    cursorSecret: config.paySecret, clock,
    streamStallTimeoutMs: config.statements.streamStallTimeoutMs,
    streams: new StreamBudget({ perCaller: config.statements.streamsPerUser, total: config.statements.streamsTotal, retryAfterSeconds: STREAM_RETRY_AFTER_SECONDS }),
  });
  // What a replayed Idempotency-Key reports as its resource's status: the resource's own, read now.
  const idempotency = new IdempotencyService(knex, { ttlHours: config.idempotencyTtlHours });
  idempotency.registerResourceStatus('escrow', escrowStatusOf);
  idempotency.registerResourceStatus('transfer', transferStatusOf);
  idempotency.registerResourceStatus(CONTRIBUTION_RESOURCE, contributionStatusOf);
  const payments = new PaymentsService(knex, accounts, deps.logger, { clock });
  // Bank and mobile-money payouts: the sandbox rail (see its magic values in the contract).
  const payoutRail = new SandboxRail({ onError: (err, transferId) => deps.logger.error({ err, transferId }, 'sandbox settlement failed') });
  const transfers = new TransferService({ knex, idempotency, rail: payoutRail, logger: deps.logger });
  const webhooks = new WebhookService({ knex, options: config.webhooks, clock, logger: deps.logger });
  // Personal data at rest: one cipher (PII_ENCRYPTION_KEY) for identity data and uploaded documents.
  const piiCipher = new PiiCipher(config.pii);
  const documents = new DocumentService({ cipher: piiCipher, clock });
  // SMS and e-mail: the adapter NOTIFIER names (config.ts refuses the sandbox in production unless named).
  const notifier: Notifier = new SandboxNotifier();
  // One-time codes are kept as an HMAC keyed from API_KEY_PEPPER (required in production); names sealed.
  const onboarding = { knex, passwords, sessions, notifier, codes: new CodeHasher(config.apiKeys.pepper), cipher: piiCipher, clock };
  const { organizations, verifications } = organizationServices({ knex, clock, accounts, notifier, documents, kyb: config.businessVerification.provider });
  // Identity verification: the adapter IDENTITY_PROVIDER names (config-providers.ts refuses the sandbox in production unless named).
  const limits = new LimitsService({ knex, policy: typeof deps.limitPolicy === 'object' ? deps.limitPolicy : loadLimitPolicy(deps.limitPolicy) });
  const identity = new IdentityService({ knex, cipher: piiCipher, documents, provider: new SandboxIdentityProvider(), clock, logger: deps.logger });
  return {
    health: new HealthService(knex, redis, CONTRACT_VERSION, clock),
    tokens,
    sessions,
    /** What a bearer token is worth: its claims, then its session (the middleware of src/http/authenticate.ts asks). */
    accessCheck: new AccessCheck(knex, config.jwt.accessTtlSeconds),
    /** Keys of organisations' servers: managed by owners and admins, checked on every request that presents one. */
    apiKeys: new ApiKeyService(knex, { pepper: config.apiKeys.pepper, environment: config.apiKeys.environment, clock }),
    passwords,
    auth: new AuthService(knex, passwords, sessions, config.login, (userId) => organizationAccess.activeOrganizationsOf(userId), clock),
    organizationAccess,
    organizations,
    /** Business verification (KYB): the sandbox provider decides its test registration numbers, administrators the rest. */
    verifications,
    accounts,
    paymentLinks: new PaymentLinksService(knex, accounts, { payUrl: config.payUrl, paySecret: config.paySecret, clock }),
    payments,
    paymentPage: new PaymentPageService(payments, { paySecret: config.paySecret }),
    invoices: new InvoiceService(knex, { clock }),
    networkStatus: new NetworkStatusService(knex, config.networkStatus),
    idempotency,
    payoutRail,
    transfers,
    ...moneyInServices({ knex, config, clock, logger: deps.logger, idempotency }),
    wallets: new WalletService(knex),
    escrows: new EscrowService({ knex, feeBps: config.escrows.feeBps, minFeeMinor: config.escrows.minFeeMinor, clock, logger: deps.logger }),
    tontines: new TontineService({ knex, now: deps.now, logger: deps.logger }),
    /** The services' clock (presenters that show time-dependent fields read it). */
    clock,
    events: new EventsService(knex, { retentionDays: config.eventRetentionDays, clock }),
    webhooks,
    /** Seals and opens personal data at rest (identity numbers, names, dates of birth). */
    piiCipher,
    /** Uploaded documents (identity documents, company papers): checked by their bytes, encrypted at rest. */
    documents,
    /** Every SMS and e-mail goes through it, in the caller's transaction (docs/operators/notifications.md). */
    notifier,
    /** What the sandbox notifier kept (the test helper GET /test-helpers/outbox). */
    outbox: new OutboxService(knex, config.notifications.outboxRetentionHours),
    /** Identity verification sessions (KYC), reviews, tiers, account closing. */
    identity,
    limits,
    /** Sign-up with a one-time code (the user starts at tier_0). */
    signup: new SignupService(onboarding),
    /** Password reset and change (sessions revoked). */
    passwordChanges: new PasswordService(onboarding),
    /** Resolves once start-up work is finished: the login's dummy hash, the tier limits written to the database. */
    ready: async (): Promise<void> => void (await Promise.all([passwords.ready(), limits.install()])),
    /**
     * Stops background work (timers, workers) and resolves once the work already under way
     * (payment settlements, payout outcomes being reported) has finished: await it before
     * closing the pool.
     */
    async shutdown(): Promise<void> {
      await transfers.whenDispatched();
      payoutRail.stop();
      await Promise.all([payments.stop(), payoutRail.idle(), webhooks.stop()]);
      // The sandbox forgot the outcomes it had scheduled: the next start hands them over at once.
      await transfers.releaseHandOvers().catch((error: unknown) => deps.logger.error({ err: error }, 'could not give back the rail hand-overs'));
    },
  };
}

/**
 * Money in and out: top-ups by mobile money through the sandbox rail (driven by the test
 * helpers), the callbacks signed with MOBILE_MONEY_CALLBACK_SECRET; refunds of payments through
 * the sandbox refund rail; payouts of organisations through the sandbox payout rail; what each
 * rail must be told delivered from rail instructions (retried by a job). A replayed
 * key reports the top-up's, the refund's or the payout's status.
 */
function moneyInServices(deps: { knex: Knex; config: Config; clock: Clock; logger: Logger; idempotency: IdempotencyService }) {
  const mobileMoneyRail = new SandboxMobileMoneyRail();
  // What the rails must be told, recorded with each change of state and delivered until they take it.
  const railInstructions = new RailInstructionService({ knex: deps.knex, clock: deps.clock, logger: deps.logger });
  const topUps = new TopUpService({ knex: deps.knex, rail: mobileMoneyRail, instructions: railInstructions, callbackSecret: deps.config.mobileMoneyCallbackSecret, clock: deps.clock, logger: deps.logger });
  deps.idempotency.registerResourceStatus('top_up', topUpStatusOf);
  const refunds = new RefundService({ knex: deps.knex, rail: new SandboxRefundRail(), instructions: railInstructions, clock: deps.clock, paymentView: findPaymentView, logger: deps.logger });
  deps.idempotency.registerResourceStatus('refund', refundStatusOf);
  const payouts = new PayoutService({ knex: deps.knex, rail: new SandboxPayoutRail(), instructions: railInstructions, clock: deps.clock, logger: deps.logger });
  deps.idempotency.registerResourceStatus('payout', payoutStatusOf);
  railInstructions.register('top_up.request', (topUpId) => topUps.askPayer(topUpId));
  railInstructions.register('top_up.give_back', (topUpId) => topUps.giveBackToPayer(topUpId));
  railInstructions.register('refund.submit', (refundId) => refunds.submit(refundId));
  railInstructions.register('payout.submit', (payoutId) => payouts.submit(payoutId));
  return { mobileMoneyRail, railInstructions, topUps, refunds, payouts };
}

/**
 * Organisations run by their members (a new one opens with one account in its default
 * currency; invitations go through the notifier) and their business verification (the provider
 * BUSINESS_VERIFICATION_PROVIDER names; the registration document stored by the documents module;
 * a tier_2 representative).
 */
function organizationServices(deps: { knex: Knex; clock: Clock; accounts: AccountService; notifier: Notifier; documents: DocumentService; kyb: 'sandbox' }) {
  const { knex, clock, accounts, notifier, documents } = deps;
  const organizations = new OrganizationService({
    knex,
    clock,
    openAccount: async (trx, organizationId, currency) => {
      await accounts.createAccount(trx, { organizationId, currency, label: `Main ${currency} account`, holderType: 'business' });
    },
    notify: (trx, message) => notifier.send(trx, message),
  });
  const verifications = new VerificationService({
    knex,
    clock,
    provider: businessVerificationProvider(deps.kyb),
    tierOf: async (trx, userId) => ((await trx('users').where({ id: userId }).first('tier')) as { tier?: string } | undefined)?.tier ?? null,
    storeRegistrationDocument: async (trx, organizationId, bytes) =>
      (await documents.store(trx, { ownerType: 'organization', ownerId: organizationId, kind: 'registration_document', bytes })).id,
  });
  return { organizations, verifications };
}

export type Services = ReturnType<typeof buildServices>;
