/**
 * The business-verification provider (a port): given a submitted organisation, it decides at
 * once or leaves the decision to an administrator. The sandbox adapter decides by the
 * registration number, as documented in the contract: ending `-0000` verified, ending `-9999`
 * rejected, anything else left pending for review.
 */
export type ProviderDecision = { status: 'verified' } | { status: 'rejected'; reason: string } | { status: 'pending' };

export interface VerificationProvider {
  decide(input: { registrationNumber: string | null; country: string | null }): ProviderDecision;
}

export const SANDBOX_VERIFIED_SUFFIX = '-0000';
export const SANDBOX_REJECTED_SUFFIX = '-9999';

export class SandboxVerificationProvider implements VerificationProvider {
  decide(input: { registrationNumber: string | null }): ProviderDecision {
    const number = input.registrationNumber ?? '';
    if (number.endsWith(SANDBOX_VERIFIED_SUFFIX)) return { status: 'verified' };
    if (number.endsWith(SANDBOX_REJECTED_SUFFIX)) return { status: 'rejected', reason: 'The registration number is not in the trade register (sandbox).' };
    return { status: 'pending' };
  }
}

/** The provider BUSINESS_VERIFICATION_PROVIDER names (config refuses to start production without the name). */
export function businessVerificationProvider(name: 'sandbox'): VerificationProvider {
  switch (name) {
    case 'sandbox':
      return new SandboxVerificationProvider();
  }
}
