import type { IdentityDetails, RequestedTier, SessionDocumentKind } from './identity-types';

/** What the platform asks an identity provider to check. */
export interface ProviderCheck {
  sessionId: string;
  tier: RequestedTier;
  details: IdentityDetails;
  documents: ReadonlyArray<{ kind: SessionDocumentKind; contentType: string; bytes: Buffer }>;
}

/** The provider's answer. `requires_input` carries a reason the person can act on, never a watch-list or PEP hint. */
export type ProviderOutcome =
  | { outcome: 'verified'; reference: string }
  | { outcome: 'needs_review'; reference: string }
  | { outcome: 'requires_input'; reference: string; code: string; reason: string };

/**
 * The identity provider port (Smile ID, Sumsub, Onfido, Persona...). Called by the processing
 * job outside any database transaction; it may take seconds. An adapter that throws leaves
 * the session in `processing` for the next run.
 */
export interface IdentityProvider {
  readonly name: string;
  check(request: ProviderCheck): Promise<ProviderOutcome>;
}

/**
 * The sandbox provider: the outcome follows the end of the ID number (the test values of the
 * contract and docs/integrators/identity-verification.md): `...0000` verified, `...1111`
 * requires_input (`document_unreadable`), `...2222` needs_review; any other number is verified.
 */
export class SandboxIdentityProvider implements IdentityProvider {
  readonly name = 'sandbox';

  async check(request: ProviderCheck): Promise<ProviderOutcome> {
    const reference = `sandbox_${request.sessionId.replace(/-/g, '').slice(0, 16)}`;
    if (request.details.idNumber.endsWith('1111')) {
      return { outcome: 'requires_input', reference, code: 'document_unreadable', reason: 'The identity document could not be read: check the number and upload a sharp, complete picture.' };
    }
    if (request.details.idNumber.endsWith('2222')) return { outcome: 'needs_review', reference };
    return { outcome: 'verified', reference };
  }
}
