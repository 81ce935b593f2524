import { describe, expect, it } from 'vitest';
import { seedIdentity } from '../../src/seed/identity-seed';
import { DEMO_TONTINES, seedTontines } from '../../src/seed/tontines-seed';
import { seedWallets } from '../../src/seed/wallets-seed';
import { reconcile } from '../../src/modules/ledger';
import { inRolledBackSeed } from '../support/seed';

describe('tontines demo seed step', () => {
  it('leaves a forming tontine with an open invitation, an active one mid-way and a completed one among the demo users (rolled back afterwards)', async () => {
    await inRolledBackSeed([seedIdentity, seedWallets, seedTontines], async (trx) => {
      const rows = (await trx('tontines as t')
        .join('ledger_accounts as a', 'a.id', 't.pool_account_id')
        .whereIn('t.name', Object.values(DEMO_TONTINES))
        .select('t.id', 't.name', 't.status', 't.current_cycle', 'a.balance_minor')) as Array<{ id: string; name: string; status: string; current_cycle: number; balance_minor: string }>;
      const byName = new Map(rows.map((row) => [row.name, row]));
      expect(byName.get(DEMO_TONTINES.forming)).toMatchObject({ status: 'forming', current_cycle: 0, balance_minor: '0' });
      expect(byName.get(DEMO_TONTINES.active)).toMatchObject({ status: 'active', current_cycle: 2, balance_minor: '20000' });
      expect(byName.get(DEMO_TONTINES.completed)).toMatchObject({ status: 'completed', current_cycle: 3, balance_minor: '0' });
      const invited = await trx('tontine_invitations as i')
        .join('users as u', 'u.id', 'i.user_id')
        .where({ 'i.tontine_id': byName.get(DEMO_TONTINES.forming)?.id, 'i.status': 'open' })
        .pluck('u.email');
      expect(invited).toEqual(['finance@demo.example']);
      const payouts = await trx('tontine_cycles').where({ tontine_id: byName.get(DEMO_TONTINES.completed)?.id, status: 'paid_out' }).count<{ count: string }[]>('* as count');
      expect(Number(payouts[0]?.count)).toBe(3);
      expect(await reconcile(trx)).toEqual([]);
    });
  });
});
