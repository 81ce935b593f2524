/**
 * THE access policy of the Business routes (/business/organizations/{orgId}/...): one rule per
 * contract operationId. The organisation-access middleware (organization-access.ts), mounted
 * once in src/http/routes.ts in front of every Business router, applies the rule of the
 * operation the validator matched; an operation under that prefix without a rule is refused
 * (500, logged), never let through.
 *
 * Adding a Business operation = one line here:
 *   myOperationId: { roles: FINANCIAL_ROLES, module: 'invoices', write: true },
 *
 * Checks, in order (see OrganizationAccessService.authorize):
 *   orgId not a UUID, unknown organisation, or caller not an active member -> 404 NotFound
 *   role not in `roles`                                                 -> 403 InsufficientRole
 *   `module` not enabled for the organisation                           -> 403 FeatureUnavailable
 *   `write` and the module is read_only or locked                       -> 423 ModuleLocked
 *   `requiresActiveOrg` and the organisation is not active              -> 422 OrganizationInactive
 * Reads of a locked or read-only module are allowed.
 */

export const ROLES = ['owner', 'admin', 'representative', 'director', 'finance_manager', 'cashier'] as const;
export type Role = (typeof ROLES)[number];

export const MODULES = ['payment_links', 'invoices', 'accounts', 'network_status'] as const;
export type ModuleName = (typeof MODULES)[number];

export type ModuleAccess = 'open' | 'read_only' | 'locked';

export interface AccessRule {
  /** Roles allowed on the operation. */
  roles: readonly Role[];
  /** The module the operation belongs to; it must be enabled for the organisation. */
  module: ModuleName;
  /** A write needs the module open (read_only or locked -> 423). */
  write: boolean;
  /** The organisation must be active (otherwise 422 OrganizationInactive). */
  requiresActiveOrg?: boolean;
}

/** The spec's "financial roles": read payment links, invoices and accounts. */
export const FINANCIAL_ROLES: readonly Role[] = ['owner', 'admin', 'representative', 'director', 'finance_manager'];
/** Manage the Checkout, payment links and invoices. */
export const PAYMENT_MANAGERS: readonly Role[] = ['owner', 'admin', 'finance_manager'];
/** Every active member except cashier staff. */
export const ALL_EXCEPT_CASHIER: readonly Role[] = ROLES.filter((role) => role !== 'cashier');
/** Owners and admins. */
export const ORGANIZATION_MANAGERS: readonly Role[] = ['owner', 'admin'];

/**
 * Keyed by the contract's operationId; roles as the contract's descriptions state them. Keep
 * one line per operation.
 */
export const ACCESS_POLICY: Readonly<Record<string, AccessRule>> = {
  // Payment links and the Checkout. Writes need an active organisation (422); the payment page
  // refuses payments too while it is not active (src/modules/payment-links/payments-service.ts).
  getOrCreateCheckout: { roles: PAYMENT_MANAGERS, module: 'payment_links', write: true, requiresActiveOrg: true },
  listPaymentLinks: { roles: FINANCIAL_ROLES, module: 'payment_links', write: false },
  createPaymentLink: { roles: PAYMENT_MANAGERS, module: 'payment_links', write: true, requiresActiveOrg: true },
  getPaymentLink: { roles: FINANCIAL_ROLES, module: 'payment_links', write: false },
  deactivatePaymentLink: { roles: PAYMENT_MANAGERS, module: 'payment_links', write: true, requiresActiveOrg: true },
  createSignedPaymentLink: { roles: PAYMENT_MANAGERS, module: 'payment_links', write: true, requiresActiveOrg: true },
  listPayments: { roles: FINANCIAL_ROLES, module: 'payment_links', write: false },
  getPayment: { roles: FINANCIAL_ROLES, module: 'payment_links', write: false },
  // Invoices, quotes, credit notes, customers
  listInvoices: { roles: FINANCIAL_ROLES, module: 'invoices', write: false },
  getInvoice: { roles: FINANCIAL_ROLES, module: 'invoices', write: false },
  createInvoice: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  finalizeInvoice: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  payInvoice: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  markInvoiceUncollectible: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  voidInvoice: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  acceptQuote: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  cancelQuote: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  createCreditNote: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  createCustomer: { roles: PAYMENT_MANAGERS, module: 'invoices', write: true },
  // Foreign-currency accounts
  listAccounts: { roles: FINANCIAL_ROLES, module: 'accounts', write: false },
  getAccountStatement: { roles: FINANCIAL_ROLES, module: 'accounts', write: false },
  // Network opening status. The spec gives the PATCH no 423: a module lock does not apply
  // to it (write: false); it needs an active organisation instead (422).
  getNetworkStatus: { roles: ALL_EXCEPT_CASHIER, module: 'network_status', write: false },
  updateNetworkStatus: { roles: ORGANIZATION_MANAGERS, module: 'network_status', write: false, requiresActiveOrg: true },
  getNetworkStatusHistory: { roles: ORGANIZATION_MANAGERS, module: 'network_status', write: false },
};

/** The organisation and the caller's place in it, set on `req.organization` by the middleware. */
export interface OrganizationContext {
  id: string;
  name: string;
  status: 'active' | 'inactive' | 'suspended';
  /** The caller's role (an active membership). */
  role: Role;
  /** Enabled modules and their access; a module absent here is not enabled. */
  moduleAccess: Partial<Record<ModuleName, ModuleAccess>>;
}

export function accessRuleFor(operationId: string): AccessRule | undefined {
  return Object.prototype.hasOwnProperty.call(ACCESS_POLICY, operationId) ? ACCESS_POLICY[operationId] : undefined;
}

/** Whether `role` may call `operationId` (for example to compute a `can_manage` flag). */
export function roleAllowed(operationId: string, role: Role): boolean {
  return accessRuleFor(operationId)?.roles.includes(role) ?? false;
}
