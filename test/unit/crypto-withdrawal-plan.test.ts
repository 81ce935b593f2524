import { describe, expect, it } from 'vitest';
import { SandboxRateSource, travelRuleApplies, withdrawalReservePosting, withdrawalSettlementPosting, withdrawalStep } from '../../src/modules/crypto';
// eslint-disable-next-line no-restricted-imports -- the pure rules the module's index does not export, tested on their own
import { isCancelable } from '../../src/modules/crypto/crypto-withdrawal-plan';
import { shardIdentity } from '../../src/modules/ledger';

const rates = new SandboxRateSource({ usdPerEur: '1.08', usdcInUsd: '1', usdtInUsd: '1' });
const withdrawal = { id: 'w-1', userId: 'u-1', asset: 'USDT', network: 'tron', amountMinor: 100_000_000n, feeMinor: 1_000_000n };

describe('Travel Rule threshold', () => {
  it('applies at 1,000 USD exactly and not one minor unit below', async () => {
    const usdt = await rates.valueInEur('USDT');
    const usd = await rates.valueInEur('USD');
    expect(travelRuleApplies(1_000_000_000n, 6, usdt, usd)).toBe(true);
    expect(travelRuleApplies(999_999_999n, 6, usdt, usd)).toBe(false);
    expect(travelRuleApplies(5_000_000_000n, 6, usdt, usd)).toBe(true);
  });

  it('values the asset at its rate: a stablecoin worth 0.5 USD reaches the threshold at 2,000', async () => {
    const halfDollar = new SandboxRateSource({ usdPerEur: '1.08', usdcInUsd: '0.5', usdtInUsd: '1' });
    const usdc = await halfDollar.valueInEur('USDC');
    const usd = await halfDollar.valueInEur('USD');
    expect(travelRuleApplies(1_999_999_999n, 6, usdc, usd)).toBe(false);
    expect(travelRuleApplies(2_000_000_000n, 6, usdc, usd)).toBe(true);
    expect(travelRuleApplies(100_00n, 2, usd, usd, 100n)).toBe(true);
    expect(travelRuleApplies(99_99n, 2, usd, usd, 100n)).toBe(false);
  });
});

describe('withdrawal steps', () => {
  const report = (confirmations: number, failed = false) => ({ confirmations, failed });

  it('moves a broadcast withdrawal to confirming, then completed at the network confirmations', () => {
    expect(withdrawalStep({ status: 'broadcast', confirmations: 0 }, report(0), 20)).toBeUndefined();
    expect(withdrawalStep({ status: 'broadcast', confirmations: 0 }, report(1), 20)).toEqual({ status: 'confirming', confirmations: 1 });
    expect(withdrawalStep({ status: 'confirming', confirmations: 1 }, report(19), 20)).toEqual({ status: 'confirming', confirmations: 19 });
    expect(withdrawalStep({ status: 'confirming', confirmations: 19 }, report(20), 20)).toEqual({ status: 'completed', confirmations: 20 });
    expect(withdrawalStep({ status: 'broadcast', confirmations: 0 }, report(25), 20)).toEqual({ status: 'completed', confirmations: 25 });
  });

  it('never moves confirmations back, nor a final withdrawal, nor one not yet broadcast', () => {
    expect(withdrawalStep({ status: 'confirming', confirmations: 5 }, report(5), 20)).toBeUndefined();
    expect(withdrawalStep({ status: 'confirming', confirmations: 5 }, report(2), 20)).toBeUndefined();
    for (const status of ['completed', 'failed', 'canceled'] as const) {
      expect(withdrawalStep({ status, confirmations: 3 }, report(30), 20)).toBeUndefined();
      expect(withdrawalStep({ status, confirmations: 3 }, report(0, true), 20)).toBeUndefined();
    }
    expect(withdrawalStep({ status: 'created', confirmations: 0 }, report(3), 20)).toBeUndefined();
    expect(withdrawalStep({ status: 'queued', confirmations: 0 }, report(3), 20)).toBeUndefined();
  });

  it('fails any withdrawal not final, keeping its confirmations', () => {
    for (const status of ['created', 'queued', 'broadcast', 'confirming'] as const) {
      expect(withdrawalStep({ status, confirmations: 2 }, report(2, true), 20)).toEqual({ status: 'failed', confirmations: 2 });
    }
  });
});

describe('withdrawal postings', () => {
  const sum = (entries: Array<{ amountMinor: bigint }>) => entries.reduce((total, entry) => total + entry.amountMinor, 0n);

  it('reserves the amount and the fee from the wallet into the transit account', () => {
    const posting = withdrawalReservePosting(withdrawal);
    expect(posting).toMatchObject({ kind: 'crypto.withdrawal.reserve', reference: 'w-1' });
    expect(posting.allowFrozen).toBeUndefined();
    expect(posting.entries).toEqual([
      { account: { ownerType: 'user', ownerId: 'u-1', currency: 'USDT', kind: 'wallet' }, amountMinor: -101_000_000n },
      { account: { ownerType: 'platform', ownerId: null, currency: 'USDT', kind: 'rail_transit', externalRef: 'crypto:withdrawals' }, amountMinor: 101_000_000n },
    ]);
  });

  it('completed: the amount out to the network, the fee to the platform; balanced', () => {
    const posting = withdrawalSettlementPosting(withdrawal, 'completed');
    expect(posting).toMatchObject({ kind: 'crypto.withdrawal.settlement', reference: 'w-1', allowFrozen: false });
    expect(sum(posting.entries)).toBe(0n);
    expect(posting.entries[0]).toEqual({ account: { ownerType: 'platform', ownerId: null, currency: 'USDT', kind: 'rail_transit', externalRef: 'crypto:withdrawals' }, amountMinor: -101_000_000n });
    expect(posting.entries[1]).toEqual({ account: { ownerType: 'platform', ownerId: null, currency: 'USDT', kind: 'external_clearing', externalRef: 'crypto:tron' }, amountMinor: 100_000_000n });
    expect(posting.entries[2]?.amountMinor).toBe(1_000_000n);
    expect(posting.entries[2]?.account).toMatchObject({ kind: 'fees', currency: 'USDT' });
    expect(withdrawalSettlementPosting({ ...withdrawal, feeMinor: 0n }, 'completed').entries).toHaveLength(2);
  });

  it.each(['failed', 'canceled'] as const)('%s: the amount and the fee back to the wallet, even a frozen one', (outcome) => {
    const posting = withdrawalSettlementPosting(withdrawal, outcome);
    expect(posting.allowFrozen).toBe(true);
    expect(posting.metadata).toEqual({ withdrawal_id: 'w-1', status: outcome });
    expect(posting.entries).toEqual([
      { account: { ownerType: 'platform', ownerId: null, currency: 'USDT', kind: 'rail_transit', externalRef: 'crypto:withdrawals' }, amountMinor: -101_000_000n },
      { account: { ownerType: 'user', ownerId: 'u-1', currency: 'USDT', kind: 'wallet' }, amountMinor: 101_000_000n },
    ]);
  });
});

describe('withdrawal postings name what they settle', () => {
  it('the reserve names the withdrawal, its network and its fee; the completed settlement its outcome', () => {
    expect(withdrawalReservePosting(withdrawal).metadata).toEqual({ withdrawal_id: 'w-1', network: 'tron', fee_minor: '1000000' });
    expect(withdrawalSettlementPosting(withdrawal, 'completed').metadata).toEqual({ withdrawal_id: 'w-1', status: 'completed' });
    expect(withdrawalSettlementPosting(withdrawal, 'completed').entries[2]?.account).toEqual(shardIdentity('fees', 'USDT', 'w-1'));
  });

  it('only a created or queued withdrawal is cancelable', () => {
    expect(['created', 'queued', 'broadcast', 'confirming', 'completed', 'failed', 'canceled'].filter((status) => isCancelable(status as never))).toEqual(['created', 'queued']);
  });

  it('the Travel Rule threshold can be another amount', async () => {
    const usdt = await rates.valueInEur('USDT');
    const usd = await rates.valueInEur('USD');
    expect(travelRuleApplies(10_000_000n, 6, usdt, usd, 10n)).toBe(true);
    expect(travelRuleApplies(9_999_999n, 6, usdt, usd, 10n)).toBe(false);
  });
});
