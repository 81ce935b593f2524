/** Identity verification (KYC): tiers, sessions and what a person submits. */

export type Tier = 'tier_0' | 'tier_1' | 'tier_2';
export type RequestedTier = Exclude<Tier, 'tier_0'>;
export const TIER_ORDER: Readonly<Record<Tier, number>> = { tier_0: 0, tier_1: 1, tier_2: 2 };

export type SessionStatus = 'requires_input' | 'processing' | 'needs_review' | 'verified' | 'rejected' | 'canceled';
/** Sessions still under way: a user has at most one. */
export const OPEN_STATUSES: readonly SessionStatus[] = ['requires_input', 'processing', 'needs_review'];

export type IdType = 'national_id' | 'passport' | 'residence_permit' | 'driving_licence';
export type SessionDocumentKind = 'id_front' | 'id_back' | 'selfie';
/** The documents a tier_2 session needs before submit (a passport has no back: id_back is optional). */
export const REQUIRED_DOCUMENTS: readonly SessionDocumentKind[] = ['id_front', 'selfie'];

export type RejectionKind = 'retry_allowed' | 'final';

/** What the person submits: personal data, held in clear only in memory, sealed at rest. */
export interface IdentityDetails {
  idType: IdType;
  idNumber: string;
  firstName: string;
  lastName: string;
  /** YYYY-MM-DD. */
  dateOfBirth: string;
  /** ISO 3166-1 alpha-2. */
  nationality: string;
}

export interface LastError {
  code: string;
  reason: string;
}

export interface SessionDocument {
  kind: SessionDocumentKind;
  documentId: string;
  contentType: string;
  sizeBytes: number;
  uploadedAt: Date;
}

export interface Review {
  decision: 'approved' | 'rejected';
  reviewerUserId: string;
  reasonCode: string | null;
  rejectionKind: RejectionKind | null;
  /** The reviewer's note (may name the person: sealed at rest, shown to administrators only). */
  note: string | null;
}

/** A session as the service reads it (no personal data). */
export interface VerificationSession {
  id: string;
  userId: string;
  tier: RequestedTier;
  status: SessionStatus;
  lastError: LastError | null;
  documents: SessionDocument[];
  attempts: number;
  submittedAt: Date | null;
  decidedAt: Date | null;
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
  review: Review | null;
}
