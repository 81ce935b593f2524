import type { Knex } from 'knex';
import { OrganizationRepository, type OrganizationProfile } from '../organizations';
import type { LinkRecord } from './payment-links-repository';
import type { PaymentLink } from './payment-links-types';

/**
 * A link as the public payment page sees it: with whether its organisation may collect
 * payments now (active, its payment_links module enabled and not locked).
 */
export interface PublicPaymentLink extends PaymentLink {
  organizationCanCollect: boolean;
}

/** The link as read at `now`: its organisation's name, and `expired` for an active link past its expiry. */
function toLink(record: LinkRecord, organization: OrganizationProfile, now: Date): PaymentLink {
  const expired = record.status === 'active' && record.expiresAt !== null && record.expiresAt.getTime() <= now.getTime();
  return { ...record, organizationName: organization.name, status: expired ? 'expired' : record.status };
}

function organizationOf(profiles: Map<string, OrganizationProfile>, record: LinkRecord): OrganizationProfile {
  const organization = profiles.get(record.organizationId);
  // payment_links.organization_id references organizations: a link without one is corrupt data.
  if (!organization) throw new Error(`the organisation of payment link ${record.id} does not exist`);
  return organization;
}

/** The links as read at `now`, with their organisations' names (one query for the organisations). */
export async function linkViews(db: Knex | Knex.Transaction, records: LinkRecord[], now: Date): Promise<PaymentLink[]> {
  const profiles = await new OrganizationRepository(db).findProfiles(records.map((record) => record.organizationId));
  return records.map((record) => toLink(record, organizationOf(profiles, record), now));
}

export async function linkView(db: Knex | Knex.Transaction, record: LinkRecord, now: Date): Promise<PaymentLink> {
  return (await linkViews(db, [record], now))[0] as PaymentLink;
}

/** The link for the public page, with its organisation's standing. */
export async function publicLinkView(db: Knex | Knex.Transaction, record: LinkRecord, now: Date): Promise<PublicPaymentLink> {
  const profiles = await new OrganizationRepository(db).findProfiles([record.organizationId]);
  const organization = organizationOf(profiles, record);
  const access = organization.moduleAccess.payment_links;
  const organizationCanCollect = organization.status === 'active' && access !== undefined && access !== 'locked';
  return { ...toLink(record, organization, now), organizationCanCollect };
}
