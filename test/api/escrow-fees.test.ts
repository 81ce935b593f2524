import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config';
import { buildTestApp } from '../support/app';
import { testKnex } from '../support/database';
import { createCaller, walletBalance } from '../support/factories';
import { escrowAction, openEscrow } from '../support/escrows';
import { expectLedgerInvariants } from '../support/ledger-invariants';

/** Tiny escrows pay a fee (rounded up, never zero at a non-zero rate), with an optional per-currency minimum. */
const knex = testKnex();

async function releasedEscrow(env: Record<string, string>, amount: number) {
  const app = await buildTestApp({ env });
  const buyer = await createCaller(app, { XOF: 10_000n });
  const seller = await createCaller(app);
  const { id, fee } = await openEscrow(app, buyer, seller, { amount, description: 'Phone charger' });
  await escrowAction(app, buyer, id, 'fund').expect(200);
  const released = await escrowAction(app, buyer, id, 'accept').expect(200);
  return { fee, settlement: released.body.data.settlement, buyer, seller };
}

describe('escrow fees on tiny amounts', () => {
  it('a 49 XOF escrow at 1 % pays 1 XOF, shown in its fee before funding', async () => {
    const { fee, settlement, buyer, seller } = await releasedEscrow({}, 49);
    expect(fee).toEqual({ rate_bps: 100, payer: 'buyer', amount: 1, amount_minor: '1', minimum_minor: '0', buyer_share_minor: '1', seller_share_minor: '0' });
    expect(settlement).toMatchObject({ to_seller_minor: '49', to_buyer_minor: '0', fee_minor: '1' });
    expect(await walletBalance(buyer.user.id, 'XOF')).toBe(10_000n - 50n);
    expect(await walletBalance(seller.user.id, 'XOF')).toBe(49n);
  });

  it('ESCROW_MIN_FEE sets a per-currency minimum, agreed at creation and charged on release', async () => {
    const { fee, settlement, buyer } = await releasedEscrow({ ESCROW_MIN_FEE: 'XOF:25,EUR:50' }, 980);
    expect(fee).toMatchObject({ amount: 25, amount_minor: '25', minimum_minor: '25', buyer_share_minor: '25' });
    expect(settlement).toMatchObject({ to_seller_minor: '980', fee_minor: '25' });
    expect(await walletBalance(buyer.user.id, 'XOF')).toBe(10_000n - 1_005n);
    await expectLedgerInvariants(knex);
  });

  it('ESCROW_MIN_FEE is read at boot, and a bad value stops the start with a clear message', () => {
    expect(loadConfig({ NODE_ENV: 'test', ESCROW_MIN_FEE: 'XOF:25, KWD:5' }).escrows.minFeeMinor).toEqual({ XOF: 25n, KWD: 5n });
    expect(loadConfig({ NODE_ENV: 'test' }).escrows.minFeeMinor).toEqual({});
    for (const bad of ['XOF=25', 'XOF:2.5', 'xof:25', 'XOF:25,XOF:30']) {
      expect(() => loadConfig({ NODE_ENV: 'test', ESCROW_MIN_FEE: bad }), bad).toThrow(/ESCROW_MIN_FEE/);
    }
  });
});
