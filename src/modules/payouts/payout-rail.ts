/**
 * The rail that pays a payout out (the bank transfer network, the mobile-money provider). It
 * answers at once in the sandbox: a payout whose amount in minor units ends in `13` is declined
 * (`payout_declined`), any other is paid.
 */
import type { PayoutDestination } from './payout-plan';

export type PayoutRailOutcome = { status: 'paid' } | { status: 'failed'; failureCode: string };

export interface PayoutRail {
  /** Pays the payout out. Idempotent on `payoutId`. */
  pay(request: { payoutId: string; currency: string; amountMinor: bigint; destination: PayoutDestination }): Promise<PayoutRailOutcome>;
}

export class SandboxPayoutRail implements PayoutRail {
  pay(request: { amountMinor: bigint }): Promise<PayoutRailOutcome> {
    return Promise.resolve(request.amountMinor % 100n === 13n ? { status: 'failed', failureCode: 'payout_declined' } : { status: 'paid' });
  }
}
