/**
 * Every event type the platform emits, with the object type it carries. The contract lists the
 * same types under its top-level `webhooks:` (a unit test keeps the two in step); webhook
 * endpoint filters are checked against this list.
 */
export const EVENT_OBJECT_TYPES = {
  'payment.succeeded': 'payment',
  'payment.failed': 'payment',
  'payment.refunded': 'payment',
  'refund.succeeded': 'refund',
  'refund.failed': 'refund',
  'payout.created': 'payout',
  'payout.approved': 'payout',
  'payout.paid': 'payout',
  'payout.failed': 'payout',
  'payout.canceled': 'payout',
  'payment_link.created': 'payment_link',
  'payment_link.deactivated': 'payment_link',
  'checkout.created': 'payment_link',
  'invoice.created': 'invoice',
  'invoice.finalized': 'invoice',
  'invoice.paid': 'invoice',
  'invoice.voided': 'invoice',
  'invoice.marked_uncollectible': 'invoice',
  'quote.created': 'quote',
  'quote.finalized': 'quote',
  'quote.accepted': 'quote',
  'quote.canceled': 'quote',
  'credit_note.created': 'credit_note',
  'credit_note.voided': 'credit_note',
  'network_status.updated': 'network_status',
  'transfer.created': 'transfer',
  'transfer.completed': 'transfer',
  'transfer.failed': 'transfer',
  'escrow.created': 'escrow',
  'escrow.funded': 'escrow',
  'escrow.delivered': 'escrow',
  'escrow.disputed': 'escrow',
  'escrow.resolved': 'escrow',
  'escrow.payout_held': 'escrow',
  'escrow.released': 'escrow',
  'escrow.refunded': 'escrow',
  'escrow.canceled': 'escrow',
  'tontine.created': 'tontine',
  'tontine.member_invited': 'tontine',
  'tontine.member_joined': 'tontine',
  'tontine.member_left': 'tontine',
  'tontine.started': 'tontine',
  'tontine.contribution_paid': 'tontine',
  'tontine.contribution_refunded': 'tontine',
  'tontine.contributions_late': 'tontine',
  'tontine.beneficiary_drawn': 'tontine',
  'tontine.payout_made': 'tontine',
  'tontine.payout_held': 'tontine',
  'tontine.cycle_opened': 'tontine',
  'tontine.completed': 'tontine',
  'tontine.canceled': 'tontine',
  'tontine.dissolved': 'tontine',
  'tontine.member_dissolution': 'tontine',
  'webhook_endpoint.disabled': 'webhook_endpoint',
  'webhook_endpoint.test': 'webhook_endpoint',
  'api_key.created': 'api_key',
  'api_key.rolled': 'api_key',
  'api_key.revoked': 'api_key',
  'api_key.transferred': 'api_key',
  'organization.created': 'organization',
  'organization.updated': 'organization',
  'organization.member_invited': 'organization_invitation',
  'organization.invitation_revoked': 'organization_invitation',
  'organization.invitation_declined': 'organization_invitation',
  'organization.member_joined': 'organization_member',
  'organization.member_role_changed': 'organization_member',
  'organization.member_removed': 'organization_member',
  'organization.verification_updated': 'organization',
  'identity.verification_session.processing': 'verification_session',
  'identity.verification_session.requires_input': 'verification_session',
  'identity.verification_session.needs_review': 'verification_session',
  'identity.verification_session.verified': 'verification_session',
  'identity.verification_session.rejected': 'verification_session',
  'identity.verification_session.canceled': 'verification_session',
  'user.tier_updated': 'user',
  'top_up.succeeded': 'top_up',
  'top_up.failed': 'top_up',
  'top_up.reversed': 'top_up',
  'crypto.deposit.detected': 'crypto_deposit',
  'crypto.deposit.confirming': 'crypto_deposit',
  'crypto.deposit.held_for_verification': 'crypto_deposit',
  'crypto.deposit.completed': 'crypto_deposit',
  'crypto.deposit.failed': 'crypto_deposit',
  'crypto.deposit.reversed': 'crypto_deposit',
  'crypto.conversion.completed': 'crypto_conversion',
  'crypto.withdrawal.created': 'crypto_withdrawal',
  'crypto.withdrawal.broadcast': 'crypto_withdrawal',
  'crypto.withdrawal.completed': 'crypto_withdrawal',
  'crypto.withdrawal.failed': 'crypto_withdrawal',
  'crypto.withdrawal.canceled': 'crypto_withdrawal',
} as const;

export type EventType = keyof typeof EVENT_OBJECT_TYPES;

export const EVENT_TYPES = Object.keys(EVENT_OBJECT_TYPES) as EventType[];

/** The filters that select `type`: itself, each prefix wildcard (`escrow.*`) and `*`. */
export function patternsMatching(type: string): string[] {
  const patterns = [type, '*'];
  for (let dot = type.indexOf('.'); dot !== -1; dot = type.indexOf('.', dot + 1)) patterns.push(`${type.slice(0, dot)}.*`);
  return patterns;
}

/** True when `pattern` is `*`, a known type, or `<prefix>.*` that selects at least one known type. */
export function isKnownPattern(pattern: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) {
    const prefix = pattern.slice(0, -1);
    return prefix.length > 1 && EVENT_TYPES.some((type) => type.startsWith(prefix));
  }
  return (EVENT_TYPES as string[]).includes(pattern);
}
