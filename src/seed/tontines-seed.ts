import type { Knex } from 'knex';
import { TontineService } from '../modules/tontines';

const DAY_MS = 86_400_000;

/** The demo tontines, by name (docs/integrators/tontines.md lists them). */
export const DEMO_TONTINES = {
  forming: 'Demo Trading savings circle',
  active: 'Finance team tontine',
  completed: 'Office tontine 2026',
} as const;

/**
 * Seed step (after the wallets): one tontine in each state among the demo users, made through
 * the tontine service itself (so the money moves through the ledger and every change has its
 * event), on the seed's transaction:
 * - forming: owner@ organizes, admin@ joined, finance@ has an open invitation (random order);
 * - active, mid-way: finance@ with representative@, director@ and cashier@, weekly 10,000 XOF,
 *   cycle 1 paid out, cycle 2 half paid;
 * - completed: admin@ with cashier@ and director@, monthly 5,000 XOF, all three cycles paid out.
 */
export async function seedTontines(trx: Knex.Transaction): Promise<void> {
  const users = (await trx('users').where('email', 'like', '%@demo.example').select('id', 'email')) as Array<{ id: string; email: string }>;
  /** The demo user as the tontine service takes its caller. */
  const demo = (name: string): { userId: string } => {
    const user = users.find((u) => u.email === `${name}@demo.example`);
    if (!user) throw new Error(`demo user ${name}@demo.example is missing: the identity seed step must run first`);
    return { userId: user.id };
  };
  const clock = { nowMs: Date.now() };
  // Built on the seed's transaction: every use case joins it, so the seed stays all or nothing.
  const db = trx as unknown as Knex;
  const tontines = new TontineService({ knex: db, now: () => new Date(clock.nowMs) });
  const at = (daysAgo: number) => {
    clock.nowMs = Date.now() - daysAgo * DAY_MS;
  };
  const enrol = async (tontineId: string, organizer: string, members: readonly string[]) => {
    for (const member of members) {
      await tontines.invite(trx, demo(organizer), tontineId, `${member}@demo.example`);
      await tontines.join(trx, demo(member), tontineId);
    }
  };
  const pay = (tontineId: string, member: string, cycle: number) => tontines.contribute(trx, demo(member), tontineId, { cycle });

  at(2);
  const forming = await tontines.create(trx, demo('owner'), { name: DEMO_TONTINES.forming, currency: 'XOF', contribution_amount: 25_000, frequency: 'monthly', max_members: 6, payout_order: 'random' });
  await enrol(forming.id, 'owner', ['admin']);
  await tontines.invite(trx, demo('owner'), forming.id, 'finance@demo.example');

  at(12);
  const active = await tontines.create(trx, demo('finance'), { name: DEMO_TONTINES.active, currency: 'XOF', contribution_amount: 10_000, frequency: 'weekly', max_members: 4, payout_order: 'join_order' });
  const activeMembers = ['finance', 'representative', 'director', 'cashier'];
  await enrol(active.id, 'finance', activeMembers.slice(1));
  at(10);
  await tontines.start(trx, demo('finance'), active.id);
  at(9);
  for (const member of activeMembers) await pay(active.id, member, 1);
  at(1);
  for (const member of activeMembers.slice(0, 2)) await pay(active.id, member, 2);

  at(130);
  const completed = await tontines.create(trx, demo('admin'), { name: DEMO_TONTINES.completed, currency: 'XOF', contribution_amount: 5_000, frequency: 'monthly', max_members: 3, payout_order: 'join_order' });
  const completedMembers = ['admin', 'cashier', 'director'];
  await enrol(completed.id, 'admin', completedMembers.slice(1));
  at(120);
  await tontines.start(trx, demo('admin'), completed.id);
  for (const [cycle, daysAgo] of [90, 60, 30].entries()) {
    at(daysAgo + cycle);
    for (const member of completedMembers) await pay(completed.id, member, cycle + 1);
  }
}
