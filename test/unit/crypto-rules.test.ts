import { describe, expect, it } from 'vitest';
import { conversionPosting, depositStep, formatRate, quoteAmounts, rateBetween, SandboxRateSource, type TransferObservation } from '../../src/modules/crypto';

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

  it('an older report changes nothing; dropped before finality reverses; first seen dropped records nothing; the other asset fails', () => {
    expect(depositStep({ status: 'confirming', confirmations: 5 }, seen(4), expected)).toBeUndefined();
    expect(depositStep({ status: 'confirming', confirmations: 5 }, seen(0), expected)).toBeUndefined();
    expect(depositStep({ status: 'confirming', confirmations: 5 }, seen(5, true), expected)).toEqual({ status: 'reversed', confirmations: 5 });
    expect(depositStep(undefined, seen(5, true), expected)).toBeUndefined();
    expect(depositStep(undefined, seen(25), expected)).toEqual({ status: 'completed', confirmations: 25 });
    expect(depositStep(undefined, seen(0, false, 'USDT'), expected)).toMatchObject({ status: 'failed' });
  });
});
