import type { AuthorizedOrganization, Handler, OperationId } from './contract';
import { accountHandlers } from './modules/accounts';
import { apiKeyHandlers } from './modules/api-keys';
import { authHandlers } from './modules/auth';
import { cryptoHandlers, cryptoWritePath } from './modules/crypto';
import { escrowHandlers, escrowWritePath } from './modules/escrows';
import { heldPayoutHandlers } from './modules/held-payouts';
import { eventsHandlers, webhookHandlers } from './modules/events';
import { healthHandlers } from './modules/health';
import { idempotencyHandlers } from './modules/idempotency';
import { identityHandlers } from './modules/identity';
import { invoiceHandlers } from './modules/invoices';
import { limitsHandlers } from './modules/limits';
import { networkStatusHandlers } from './modules/network-status';
import { notificationsHandlers } from './modules/notifications';
import { onboardingHandlers } from './modules/onboarding';
import { accessRuleFor, callerMay, organizationHandlers } from './modules/organizations';
import { paymentLinksHandlers } from './modules/payment-links';
import { payoutHandlers, payoutWritePath } from './modules/payouts';
import { paymentsWithRefunds, refundHandlers, refundWritePath } from './modules/refunds';
import { tontineHandlers, tontineWritePath } from './modules/tontines';
import { topUpHandlers, topUpWritePath } from './modules/top-ups';
import { transfersHandlers } from './modules/transfers';
import { walletsHandlers } from './modules/wallets';
import type { Services } from './services';

/**
 * Contract operations without a handler yet: they answer 501 NotImplemented (after
 * authentication and, for Business routes, their x-access rule). Adding a module's handlers =
 * one spread line in buildHandlers and its operations removed from this list.
 */
export const NOT_IMPLEMENTED = [] as const satisfies readonly OperationId[];

type Implemented = Exclude<OperationId, (typeof NOT_IMPLEMENTED)[number]>;

/** One handler per implemented contract operation: the compiler names any that is missing. */
export type ContractHandlers = { [Id in Implemented]: Handler<Id> };

/**
 * Whether the caller of an authorised organisation may call an operation: its role's rule or its
 * API key's scopes (callerMay), and the operation's module enabled for the organisation. What
 * decides which events a caller sees and which an endpoint receives.
 */
function organizationMayCall(organization: AuthorizedOrganization, operationId: OperationId): boolean {
  const module = accessRuleFor(operationId)?.module;
  return callerMay(operationId, organization) && (module === undefined || module === null || organization.moduleAccess[module] !== undefined);
}

export function buildHandlers(services: Services, options: { payUrl: string }): ContractHandlers {
  return {
    ...healthHandlers(services.health),
    ...authHandlers(services.auth, services.sessions, (userId) => services.identity.standingOf(userId)),
    ...identityHandlers(services.identity, services.clock, (userId, trx) => services.sessions.endAllOfClosedAccount(trx, userId)),
    ...transfersHandlers(services.transfers),
    ...walletsHandlers(services.wallets),
    ...topUpHandlers(services.topUps, (reference, outcome) => services.mobileMoneyRail.decide(reference, outcome)),
    ...idempotencyHandlers(services.idempotency),
    ...paymentsWithRefunds(paymentLinksHandlers(services.paymentLinks, services.payments, options.payUrl), services.refunds),
    ...refundHandlers(services.refunds),
    ...payoutHandlers(services.payouts),
    ...invoiceHandlers(services.invoices),
    ...accountHandlers(services.accounts),
    ...limitsHandlers(services.limits),
    ...networkStatusHandlers(services.networkStatus),
    ...apiKeyHandlers(services.apiKeys),
    ...escrowHandlers(services.escrows),
    ...tontineHandlers(services.tontines),
    ...heldPayoutHandlers(services.heldPayouts),
    ...eventsHandlers(services.events, organizationMayCall),
    ...webhookHandlers(services.webhooks, services.clock, organizationMayCall),
    ...organizationHandlers(services.organizations, services.verifications),
    ...notificationsHandlers(services.outbox),
    ...onboardingHandlers(services.signup, services.passwordChanges, services.sessions),
    ...cryptoHandlers(services.cryptoDeposits, services.cryptoConversions, services.cryptoWithdrawalAddresses, services.cryptoWithdrawals, services.cryptoOrganizations),
  };
}

/** The operations on the one write path: each claims its Idempotency-Key in its locked read (src/modules/writes). */
export const WRITE_PATH_OPERATIONS: readonly OperationId[] = [...escrowWritePath, ...tontineWritePath, ...topUpWritePath, ...refundWritePath, ...cryptoWritePath, ...payoutWritePath];
