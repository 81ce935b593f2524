/**
 * Payout rails: how money leaves the platform for a bank account or a mobile-money wallet.
 * A rail accepts a payout (`submit`, called after the transfer's transaction committed,
 * never inside it) and reports the outcome later through the listener it was given: the
 * transfer stays `pending` until then. Real rails report through webhooks or polling; the
 * sandbox rail decides from documented magic values and reports after a delay.
 */

export type PayoutRail = 'bank' | 'mobile_money';

export interface PayoutRequest {
  transferId: string;
  rail: PayoutRail;
  currency: string;
  amountMinor: bigint;
  /** Normalised IBAN (bank) or E.164 number (mobile money). */
  recipient: string;
}

export type PayoutOutcome =
  | { status: 'completed'; railReference: string }
  | { status: 'failed'; railReference: string; code: string; reason: string };

export type PayoutListener = (transferId: string, outcome: PayoutOutcome) => Promise<void>;

export interface RailAdapter {
  readonly rails: readonly PayoutRail[];
  /** Registers who hears about outcomes (the transfer service). */
  onOutcome(listener: PayoutListener): void;
  /**
   * Hands a payout to the rail. Idempotent on `transferId`: submitting again (after a
   * restart) never pays twice. Resolves with the rail's reference once accepted.
   */
  submit(request: PayoutRequest): Promise<{ railReference: string }>;
}

/**
 * Sandbox magic values (documented in the contract, like a payment provider's test numbers):
 * the last four characters of the IBAN or of the mobile-money number decide the outcome.
 */
export const SANDBOX_MAGIC: Record<PayoutRail, Record<string, { code: string; reason: string }>> = {
  bank: {
    '0002': { code: 'account_closed', reason: 'The beneficiary bank account is closed.' },
    '0003': { code: 'rejected_by_bank', reason: 'The beneficiary bank rejected the payment.' },
  },
  mobile_money: {
    '0002': { code: 'recipient_not_registered', reason: 'The number is not registered with a mobile-money provider.' },
    '0003': { code: 'rejected_by_provider', reason: 'The mobile-money provider rejected the payment.' },
  },
};

export function sandboxOutcome(request: PayoutRequest, railReference: string): PayoutOutcome {
  const failure = SANDBOX_MAGIC[request.rail][request.recipient.slice(-4)];
  return failure ? { status: 'failed', railReference, ...failure } : { status: 'completed', railReference };
}

export interface SandboxRailOptions {
  /** Delay before the outcome is reported (default 2000 ms). */
  settlementDelayMs?: number;
  onError?: (error: unknown, transferId: string) => void;
}

/** The sandbox rail for both bank and mobile money: settles every payout after a delay. */
export class SandboxRail implements RailAdapter {
  readonly rails = ['bank', 'mobile_money'] as const;
  private listener: PayoutListener | undefined;
  private readonly scheduled = new Map<string, { timer: NodeJS.Timeout; run: () => Promise<void> }>();
  private readonly running = new Set<Promise<void>>();
  private readonly delayMs: number;

  constructor(private readonly options: SandboxRailOptions = {}) {
    this.delayMs = options.settlementDelayMs ?? 2000;
  }

  onOutcome(listener: PayoutListener): void {
    this.listener = listener;
  }

  async submit(request: PayoutRequest): Promise<{ railReference: string }> {
    const railReference = `sandbox_${request.rail}_${request.transferId}`;
    if (this.scheduled.has(request.transferId)) return { railReference };
    const outcome = sandboxOutcome(request, railReference);
    const run = async () => {
      this.scheduled.delete(request.transferId);
      try {
        await this.listener?.(request.transferId, outcome);
      } catch (error) {
        this.options.onError?.(error, request.transferId);
      }
    };
    const timer = setTimeout(() => this.track(run()), this.delayMs);
    timer.unref();
    this.scheduled.set(request.transferId, { timer, run });
    return { railReference };
  }

  /** Reports every scheduled outcome now and waits for them (tests, demos). */
  async settleAll(): Promise<void> {
    for (const [, entry] of [...this.scheduled]) {
      clearTimeout(entry.timer);
      this.track(entry.run());
    }
    await this.idle();
  }

  /** Waits until no outcome is being reported. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  /** Forgets scheduled outcomes (shutdown). Pending transfers are resubmitted at the next start. */
  stop(): void {
    for (const entry of this.scheduled.values()) clearTimeout(entry.timer);
    this.scheduled.clear();
  }

  private track(promise: Promise<void>): void {
    this.running.add(promise);
    void promise.finally(() => this.running.delete(promise));
  }
}
