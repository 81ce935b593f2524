import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { systemClock, type Clock } from './clock';
import type { Config } from './config';
import { loadOpenApiDocument } from './http/openapi-document';
import { AccountService } from './modules/accounts';
import { HealthService } from './modules/health/health-service';
import { InvoiceService } from './modules/invoices/invoice-service';
import { NetworkStatusService } from './modules/network-status/network-status-service';
import { AuthService } from './modules/auth/auth-service';
import { PasswordHasher } from './modules/auth/password-hasher';
import { SessionService } from './modules/auth/session-service';
import { TokenService } from './modules/auth/token-service';
import { OrganizationAccessService } from './modules/organizations/organization-access-service';
import { PaymentLinksService } from './modules/payment-links/payment-links-service';
import { PaymentsService } from './modules/payment-links/payments-service';
import { IdempotencyService } from './modules/idempotency/idempotency-service';
import { TontineService } from './modules/tontines';
import { SandboxRail } from './modules/transfers/rails';
import { TransferService } from './modules/transfers/transfers-service';
import { WalletService } from './modules/wallets/wallets-service';

export interface ServiceDeps {
  config: Config;
  knex: Knex;
  logger: Logger;
  redis?: Redis;
  /** The clock of every service (tests inject one); the system clock when absent. */
  now?: Clock;
}

/** The composition of every service; one place to see what depends on what. */
export function buildServices(deps: ServiceDeps) {
  const { config, knex, redis } = deps;
  const clock = deps.now ?? systemClock;
  const tokens = new TokenService(config.jwt);
  const sessions = new SessionService(knex, tokens, clock);
  const passwords = new PasswordHasher();
  const accounts = new AccountService(knex, { cursorSecret: config.paySecret, clock, streamStallTimeoutMs: config.statements.streamStallTimeoutMs });
  const payments = new PaymentsService(knex, accounts, deps.logger, { clock });
  const idempotency = new IdempotencyService(knex, { ttlHours: config.idempotencyTtlHours, logger: deps.logger });
  // Bank and mobile-money payouts: the sandbox rail (see its magic values in the contract).
  const payoutRail = new SandboxRail({ onError: (err, transferId) => deps.logger.error({ err, transferId }, 'sandbox settlement failed') });
  return {
    health: new HealthService(knex, redis, loadOpenApiDocument().version, clock),
    tokens,
    sessions,
    passwords,
    auth: new AuthService(knex, passwords, sessions, config.login, clock),
    organizationAccess: new OrganizationAccessService(knex),
    accounts,
    paymentLinks: new PaymentLinksService(knex, accounts, { payUrl: config.payUrl, paySecret: config.paySecret, clock }),
    payments,
    invoices: new InvoiceService(knex, { idempotency, clock }),
    networkStatus: new NetworkStatusService(knex, config.networkStatus),
    idempotency,
    payoutRail,
    transfers: new TransferService({ knex, idempotency, rail: payoutRail, logger: deps.logger }),
    wallets: new WalletService(knex),
    tontines: new TontineService({ knex, idempotency, now: deps.now }),
    /** Resolves once start-up work done at construction is finished (the login's dummy hash). */
    async ready(): Promise<void> {
      await passwords.ready();
    },
    /**
     * Stops background work (timers, workers) and resolves once the work already under way
     * (payment settlements, payout outcomes being reported) has finished: await it before
     * closing the pool.
     */
    async shutdown(): Promise<void> {
      payoutRail.stop();
      await Promise.all([payments.stop(), payoutRail.idle()]);
    },
  };
}

export type Services = ReturnType<typeof buildServices>;
