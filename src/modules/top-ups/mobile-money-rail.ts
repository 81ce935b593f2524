/**
 * The mobile-money collection rail: how money enters the platform from a payer's mobile-money
 * account (MTN MoMo's `requesttopay`, Orange Money's web payment). The platform names the
 * collection (`providerReference`, as MoMo's X-Reference-Id), asks the payer to approve it
 * (`requestToPay`, after the top-up's transaction committed, never inside it), and hears the
 * outcome by a signed callback (POST /rails/mobile-money/callbacks) or by asking (`statusOf`,
 * the job's question about top-ups pending too long). A collection the ledger then refuses to
 * credit goes back to its payer (`giveBack`).
 */

export const MOBILE_MONEY_PROVIDERS = ['orange_money', 'mtn_momo', 'moov_money', 'wave'] as const;
export type MobileMoneyProvider = (typeof MOBILE_MONEY_PROVIDERS)[number];

export interface CollectionRequest {
  providerReference: string;
  provider: MobileMoneyProvider;
  /** The payer's number, E.164. */
  msisdn: string;
  currency: string;
  amountMinor: bigint;
}

/** What the rail says of a collection. */
export type CollectionStatus = { status: 'pending' } | { status: 'succeeded' } | { status: 'failed'; failureCode: string };

/** The outcome a callback or an answer of the rail settles a top-up with. */
export type CollectionOutcome = Exclude<CollectionStatus, { status: 'pending' }>;

export interface MobileMoneyRail {
  /** Asks the payer to approve. Idempotent on `providerReference`: asking again never collects twice. */
  requestToPay(request: CollectionRequest): Promise<void>;
  /** What the rail knows of the collection now. */
  statusOf(providerReference: string): Promise<CollectionStatus>;
  /** Pays a collected amount back to its payer. Idempotent on `providerReference`. */
  giveBack(providerReference: string): Promise<void>;
}

/**
 * The sandbox rail: it remembers the collections asked of it (in this process) and settles them
 * when told (the test helpers approve and decline). A collection it does not know (asked on
 * another instance, or before a restart) it reports failed, `not_found_at_provider`, as a real
 * provider answers for a reference it never received.
 */
export class SandboxMobileMoneyRail implements MobileMoneyRail {
  private readonly collections = new Map<string, CollectionStatus>();
  private readonly givenBack = new Set<string>();

  requestToPay(request: CollectionRequest): Promise<void> {
    if (!this.collections.has(request.providerReference)) this.collections.set(request.providerReference, { status: 'pending' });
    return Promise.resolve();
  }

  statusOf(providerReference: string): Promise<CollectionStatus> {
    return Promise.resolve(this.collections.get(providerReference) ?? { status: 'failed', failureCode: 'not_found_at_provider' });
  }

  giveBack(providerReference: string): Promise<void> {
    this.givenBack.add(providerReference);
    return Promise.resolve();
  }

  /** The payer approved or declined (the test helpers): what `statusOf` answers from now on. */
  decide(providerReference: string, outcome: CollectionOutcome): void {
    this.collections.set(providerReference, outcome);
  }

  /** Whether the collection was paid back to its payer (tests read it). */
  wasGivenBack(providerReference: string): boolean {
    return this.givenBack.has(providerReference);
  }
}
