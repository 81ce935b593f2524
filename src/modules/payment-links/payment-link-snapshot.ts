import type { Knex } from 'knex';
import { linkView } from './link-views';
import { presentLink } from './payment-links-presenter';
import { PaymentLinksRepository } from './payment-links-repository';

/** A payment link or Checkout as the API returns it: the `data.object` of its events. */
export async function paymentLinkSnapshot(db: Knex | Knex.Transaction, linkId: string, at: Date, payUrl: string): Promise<unknown> {
  const record = await new PaymentLinksRepository(db).findByIdForPayment(linkId);
  return record ? presentLink(await linkView(db, record, at), payUrl) : undefined;
}
