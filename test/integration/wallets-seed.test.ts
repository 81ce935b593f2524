import { describe, expect, it } from 'vitest';
import { DEMO_OUTSIDER_EMAIL, DEMO_USERS, seedIdentity } from '../../src/seed/identity-seed';
import { seedWallets } from '../../src/seed/wallets-seed';
import { reconcile } from '../../src/modules/ledger';
import { inRolledBackSeed } from '../support/seed';

describe('wallets demo seed step', () => {
  it('funds each demo user with 1,000,000 XOF and 1,000 EUR through postings from external clearing', async () => {
    await inRolledBackSeed([seedIdentity, seedWallets], async (trx) => {
      const emails = [...DEMO_USERS.map((u) => u.email), DEMO_OUTSIDER_EMAIL];
      const wallets = (await trx('ledger_accounts as a')
        .join('users as u', 'u.id', 'a.owner_id')
        .where({ 'a.owner_type': 'user', 'a.kind': 'wallet' })
        .whereIn('u.email', emails)
        .select('u.email', 'a.currency', 'a.balance_minor')) as Array<{ email: string; currency: string; balance_minor: string }>;
      expect(wallets).toHaveLength(emails.length * 2);
      for (const w of wallets) expect([w.email, w.currency, w.balance_minor]).toEqual([w.email, w.currency, w.currency === 'XOF' ? '1000000' : '100000']);
      const fundings = (await trx('postings as p')
        .join('entries as e', 'e.posting_id', 'p.id')
        .join('ledger_accounts as a', 'a.id', 'e.account_id')
        .where('p.reference', 'like', 'demo-seed:%')
        .select('p.kind', 'a.kind as account_kind', 'e.amount_minor')) as Array<{ kind: string; account_kind: string; amount_minor: string }>;
      expect(fundings).toHaveLength(emails.length * 2 * 2);
      expect(new Set(fundings.map((f) => f.kind))).toEqual(new Set(['wallet.funding']));
      expect(fundings.filter((f) => f.account_kind === 'external_clearing').every((f) => BigInt(f.amount_minor) < 0n)).toBe(true);
      expect(await reconcile(trx)).toEqual([]);
    });
  });
});
