import type { Knex } from 'knex';
import { currencies } from '../ledger';
import { summaryView, type TontineView } from './tontine-presenter';
import { TontineRepository } from './tontine-repository';

/**
 * The tontine as the list API returns it, read by no particular member (role
 * `administrator`): the `data.object` of its events, taken inside the transaction of the change.
 */
export async function tontineSnapshot(db: Knex | Knex.Transaction, tontineId: string): Promise<TontineView | undefined> {
  const repo = new TontineRepository(db);
  const tontine = await repo.find(tontineId);
  if (!tontine) return undefined;
  const members = await repo.members(tontineId);
  const cycles = await repo.cycles(tontineId);
  const current = cycles.find((cycle) => cycle.number === tontine.currentCycle);
  const { exponent } = await currencies.require(db, tontine.currency);
  return summaryView(tontine, { role: 'administrator', memberCount: members.length, currentDueAt: current?.dueAt ?? null, exponent });
}
