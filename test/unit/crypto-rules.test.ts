import { describe, expect, it } from 'vitest';
import { conversionPosting, depositStep, formatRate, organizationCryptoIdentity, quoteAmounts, rateBetween, SandboxRateSource, type TransferObservation } from '../../src/modules/crypto';
// eslint-disable-next-line no-restricted-imports -- the pure rules the module's index does not export, tested on their own
import { depositCreditPosting, networkClearingIdentity } from '../../src/modules/crypto/crypto-deposit-lifecycle';
// eslint-disable-next-line no-restricted-imports -- the pure rules the module's index does not export, tested on their own
import { liquidityIdentity } from '../../src/modules/crypto/crypto-quote';
import { shardIdentity } from '../../src/modules/ledger';

const rates = new SandboxRateSource({ usdPerEur: '1.08', usdcInUsd: '1', usdtInUsd: '1' });

describe('quote amounts', () => {
  it('XOF/EUR is the fixed parity 655.957', async () => {
    expect(formatRate(rateBetween(await rates.valueInEur('EUR'), await rates.valueInEur('XOF')))).toBe('655.957');
    const amounts = quoteAmounts({ rate: rateBetween(await rates.valueInEur('EUR'), await rates.valueInEur('XOF')), fromExponent: 2, toExponent: 0, feeBps: 50, fromAmountMinor: 100_00n });
    // 100 EUR, 0.50 EUR of fee, 99.50 EUR * 655.957 = 65267.72 XOF rounded down.
    expect(amounts).toEqual({ fromAmountMinor: 100_00n, feeMinor: 50n, toAmountMinor: 65_267n });
  });

  it('from to_amount: the least from_amount that yields it, whatever the pair and the fee', async () => {
    const codes = ['XOF', 'EUR', 'USD', 'USDC', 'USDT'] as const;
    const exponents = { XOF: 0, EUR: 2, USD: 2, USDC: 6, USDT: 6 };
    for (const from of codes) {
      for (const to of codes.filter((code) => code !== from)) {
        const rate = rateBetween(await rates.valueInEur(from), await rates.valueInEur(to));
        for (const feeBps of [0, 50, 333]) {
          for (const toAmountMinor of [1n, 999n, 123_456_789n]) {
            const args = { rate, fromExponent: exponents[from], toExponent: exponents[to], feeBps };
            let quoted;
            try {
              quoted = quoteAmounts({ ...args, toAmountMinor });
            } catch {
              continue;
            }
            expect(quoteAmounts({ ...args, fromAmountMinor: quoted.fromAmountMinor }).toAmountMinor, `${from}->${to}`).toBeGreaterThanOrEqual(toAmountMinor);
            if (quoted.fromAmountMinor > 1n) {
              const less = (() => {
                try {
                  return quoteAmounts({ ...args, fromAmountMinor: quoted.fromAmountMinor - 1n }).toAmountMinor;
                } catch {
                  return 0n;
                }
              })();
              expect(less, `${from}->${to} ${feeBps}`).toBeLessThan(toAmountMinor);
            }
          }
        }
      }
    }
  });

  it('the posting balances in each currency, the fee to the fee shard', () => {
    const posting = conversionPosting({ id: 'c1', userId: 'u1', fromCurrency: 'USDC', toCurrency: 'XOF', fromAmountMinor: 100_000_000n, toAmountMinor: 60_433n, feeMinor: 500_000n });
    const sums = new Map<string, bigint>();
    for (const entry of posting.entries) {
      const currency = 'currency' in entry.account ? entry.account.currency : '';
      sums.set(currency, (sums.get(currency) ?? 0n) + entry.amountMinor);
    }
    expect(Object.fromEntries(sums)).toEqual({ USDC: 0n, XOF: 0n });
    expect(posting.entries.filter((entry) => 'kind' in entry.account && entry.account.kind === 'fees').map((entry) => entry.amountMinor)).toEqual([500_000n]);
  });
});

describe('deposit states only move forward', () => {
  const seen = (confirmations: number, dropped = false, asset = 'USDC'): TransferObservation => ({ network: 'tron', txHash: 'ab', outputIndex: 0, address: 'T', asset, amountMinor: 1n, confirmations, dropped });
  const expected = { asset: 'USDC', confirmationsRequired: 20 };

  it('detected, confirming n of N, completed at N; nothing after a final state', () => {
    expect(depositStep(undefined, seen(0), expected)).toEqual({ status: 'detected', confirmations: 0 });
    expect(depositStep({ status: 'detected', confirmations: 0 }, seen(3), expected)).toEqual({ status: 'confirming', confirmations: 3 });
    expect(depositStep({ status: 'confirming', confirmations: 3 }, seen(20), expected)).toEqual({ status: 'completed', confirmations: 20 });
    for (const status of ['completed', 'failed', 'reversed'] as const) {
      for (const report of [seen(0), seen(25), seen(5, true)]) expect(depositStep({ status, confirmations: 20 }, report, expected)).toBeUndefined();
    }
  });

  it('a held deposit (final, its credit waiting for its owner\'s limits) is changed by no report: not a later one, not a reorganisation', () => {
    for (const report of [seen(0), seen(20), seen(25), seen(40), seen(5, true), seen(25, true)]) {
      expect(depositStep({ status: 'held_for_verification', confirmations: 20 }, report, expected)).toBeUndefined();
    }
  });

  it('an older report changes nothing; dropped before finality reverses; first seen dropped records nothing; the other asset fails', () => {
    expect(depositStep({ status: 'confirming', confirmations: 5 }, seen(4), expected)).toBeUndefined();
    expect(depositStep({ status: 'confirming', confirmations: 5 }, seen(0), expected)).toBeUndefined();
    expect(depositStep({ status: 'confirming', confirmations: 5 }, seen(5, true), expected)).toEqual({ status: 'reversed', confirmations: 5 });
    expect(depositStep(undefined, seen(5, true), expected)).toBeUndefined();
    expect(depositStep(undefined, seen(25), expected)).toEqual({ status: 'completed', confirmations: 25 });
    expect(depositStep(undefined, seen(0, false, 'USDT'), expected)).toEqual({ status: 'failed', confirmations: 0, failureReason: 'USDT was sent to an address for USDC' });
    // The same count reported again changes nothing either.
    expect(depositStep({ status: 'confirming', confirmations: 5 }, seen(5), expected)).toBeUndefined();
    expect(depositStep({ status: 'detected', confirmations: 0 }, seen(0), expected)).toBeUndefined();
  });
});

describe('the deposit’s credit and the quote’s details, written out', () => {
  it('a final deposit credits the wallet from the network’s clearing account, once (its id is the reference), even a frozen wallet', () => {
    const posting = depositCreditPosting({ id: 'd-1', userId: 'u-1', asset: 'USDC', network: 'ethereum', amountMinor: 25_000_000n, txHash: '0xab', outputIndex: 3 });
    expect(posting).toEqual({
      kind: 'crypto.deposit',
      reference: 'd-1',
      metadata: { deposit_id: 'd-1', network: 'ethereum', tx_hash: '0xab', output_index: 3 },
      allowFrozen: true,
      entries: [
        { account: { ownerType: 'platform', ownerId: null, currency: 'USDC', kind: 'external_clearing', externalRef: 'crypto:ethereum' }, amountMinor: -25_000_000n },
        { account: { ownerType: 'user', ownerId: 'u-1', currency: 'USDC', kind: 'wallet' }, amountMinor: 25_000_000n },
      ],
    });
    expect(networkClearingIdentity('USDT', 'tron')).toEqual({ ownerType: 'platform', ownerId: null, currency: 'USDT', kind: 'external_clearing', externalRef: 'crypto:tron' });
  });

  it('a conversion names itself and both liquidity accounts; without a fee it has no fee entry', () => {
    const posting = conversionPosting({ id: 'c1', userId: 'u1', fromCurrency: 'EUR', toCurrency: 'USDC', fromAmountMinor: 1_000n, toAmountMinor: 10_800_000n, feeMinor: 0n });
    expect(posting).toEqual({
      kind: 'crypto.conversion',
      reference: 'c1',
      metadata: { conversion_id: 'c1' },
      entries: [
        { account: { ownerType: 'user', ownerId: 'u1', currency: 'EUR', kind: 'wallet' }, amountMinor: -1_000n },
        { account: liquidityIdentity('EUR'), amountMinor: 1_000n },
        { account: liquidityIdentity('USDC'), amountMinor: -10_800_000n },
        { account: { ownerType: 'user', ownerId: 'u1', currency: 'USDC', kind: 'wallet' }, amountMinor: 10_800_000n },
      ],
    });
    expect(liquidityIdentity('XOF')).toEqual({ ownerType: 'platform', ownerId: null, currency: 'XOF', kind: 'external_clearing', externalRef: 'crypto:liquidity' });
    // An organisation's stablecoin balance: one org_account per asset, told apart by its reference.
    expect(organizationCryptoIdentity('o1', 'USDC')).toEqual({ ownerType: 'organization', ownerId: 'o1', currency: 'USDC', kind: 'org_account', externalRef: 'crypto' });
    const withFee = conversionPosting({ id: 'c2', userId: 'u1', fromCurrency: 'EUR', toCurrency: 'USDC', fromAmountMinor: 1_000n, toAmountMinor: 10_746_000n, feeMinor: 5n });
    expect(withFee.entries.map((entry) => entry.amountMinor)).toEqual([-1_000n, 995n, 5n, -10_746_000n, 10_746_000n]);
    expect(withFee.entries[2]?.account).toEqual(shardIdentity('fees', 'EUR', 'c2'));
  });

  it('a rate shows at most 10 decimals, rounded down, without trailing zeros; a whole rate shows no point', () => {
    expect(formatRate({ num: 2n, den: 1n })).toBe('2');
    expect(formatRate({ num: 1n, den: 4n })).toBe('0.25');
    expect(formatRate({ num: 2n, den: 3n })).toBe('0.6666666666');
    expect(formatRate({ num: 1n, den: 3_000_000_000_000n })).toBe('0');
    expect(formatRate({ num: 1n, den: 3_000_000_000n })).toBe('0.0000000003');
    expect(formatRate({ num: 12_345n, den: 10n })).toBe('1234.5');
    expect(rateBetween({ num: 3n, den: 2n }, { num: 5n, den: 7n })).toEqual({ num: 21n, den: 10n });
  });

  it('a quote of nothing after the fee is refused: 422 AmountTooSmall', () => {
    const rate = { num: 1n, den: 1n };
    const refusal = expect.objectContaining({ code: 'AmountTooSmall', category: 'unprocessable', message: 'The amount converts to nothing after the fee: quote a larger amount.' });
    // 1 minor unit with a fee: the fee (rounded up) is all of it.
    expect(() => quoteAmounts({ rate, fromExponent: 2, toExponent: 2, feeBps: 50, fromAmountMinor: 1n })).toThrow(refusal);
    // Converted to a smaller unit, rounded down to nothing.
    expect(() => quoteAmounts({ rate, fromExponent: 6, toExponent: 2, feeBps: 0, fromAmountMinor: 9_999n })).toThrow(refusal);
    expect(quoteAmounts({ rate, fromExponent: 6, toExponent: 2, feeBps: 0, fromAmountMinor: 10_000n })).toEqual({ fromAmountMinor: 10_000n, feeMinor: 0n, toAmountMinor: 1n });
    // From the other side: the fee rounded up, the amount converted at exactly the rate.
    expect(quoteAmounts({ rate, fromExponent: 2, toExponent: 2, feeBps: 50, toAmountMinor: 199n })).toEqual({ fromAmountMinor: 200n, feeMinor: 1n, toAmountMinor: 199n });
    expect(quoteAmounts({ rate, fromExponent: 2, toExponent: 2, feeBps: 50, fromAmountMinor: 201n })).toEqual({ fromAmountMinor: 201n, feeMinor: 2n, toAmountMinor: 199n });
  });
});
