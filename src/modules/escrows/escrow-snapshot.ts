import type { Knex } from 'knex';
import { presentEscrows, type EscrowView } from './escrow-presenter';
import { EscrowRepository } from './escrow-repository';

/** Nobody in particular: the view a party-neutral reader gets (role `administrator`, no allowed actions). */
const NEUTRAL_READER = { userId: '00000000-0000-0000-0000-000000000000', isAdmin: false };

/**
 * The escrow as the API returns it, read by no particular party: the `data.object` of its
 * events (taken inside the transaction of the change; see src/modules/events).
 */
export async function escrowSnapshot(db: Knex | Knex.Transaction, escrowId: string, at: Date): Promise<EscrowView | undefined> {
  const escrow = await new EscrowRepository(db).findById(escrowId);
  if (!escrow) return undefined;
  const [view] = await presentEscrows(db, [escrow], NEUTRAL_READER, at);
  return view;
}
