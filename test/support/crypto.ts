import type { App } from './app';
import { testKnex } from './database';
import { createCaller, type TestCaller } from './factories';

/** A signed-in user at `tier` (tier_2 by default: crypto's), its wallets funded as createCaller funds them. */
export async function cryptoCaller(app: App, balances: Record<string, bigint> = {}, tier: 'tier_0' | 'tier_1' | 'tier_2' = 'tier_2'): Promise<TestCaller> {
  const caller = await createCaller(app, balances);
  await testKnex()('users').where({ id: caller.user.id }).update({ tier });
  return caller;
}
