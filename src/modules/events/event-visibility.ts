import type { OperationId } from '../../contract';
import type { EventSubjectType } from './event-repository';

/**
 * Who may read an event: whoever may read the object it carries, by the access rule of the
 * object's own GET (roles, module and API-key scopes). The same rule decides which events a
 * webhook endpoint receives (the object types its configurer may read). An object type without
 * a Business GET (a user's transfer, escrow or tontine) is never shown among an organisation's events.
 */
export const EVENT_READ_OPERATION: Record<EventSubjectType, OperationId | undefined> = {
  invoice: 'getInvoice',
  quote: 'getInvoice',
  credit_note: 'getInvoice',
  payment: 'getPayment',
  payment_link: 'getPaymentLink',
  network_status: 'getNetworkStatus',
  webhook_endpoint: 'getWebhookEndpoint',
  api_key: 'getApiKey',
  organization: 'getOrganization',
  organization_member: 'listOrganizationMembers',
  organization_invitation: 'listOrganizationInvitations',
  verification_session: undefined,
  user: undefined,
  transfer: undefined,
  escrow: undefined,
  tontine: undefined,
  top_up: undefined,
  refund: 'listPaymentRefunds',
  payout: 'getPayout',
  crypto_deposit: undefined,
  crypto_conversion: 'getOrganizationCryptoConversion',
  crypto_withdrawal: undefined,
};

/** Whether the caller may call an operation (its role's rule, or its key's scopes, and the module enabled). */
export type MayCall = (operationId: OperationId) => boolean;

/** The object types whose events a caller may read. */
export function readableObjectTypes(mayCall: MayCall): EventSubjectType[] {
  return (Object.entries(EVENT_READ_OPERATION) as [EventSubjectType, OperationId | undefined][])
    .filter(([, operationId]) => operationId !== undefined && mayCall(operationId))
    .map(([type]) => type);
}
