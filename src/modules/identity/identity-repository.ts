import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import type { PiiCipher } from '../../pii-cipher';
import type { IdentityDetails, IdType, LastError, RejectionKind, RequestedTier, Review, SessionDocument, SessionDocumentKind, SessionStatus, Tier, VerificationSession } from './identity-types';

type Db = Knex | Knex.Transaction;

export const SESSION_PAGES = new Keyset({ table: 'verification_sessions', alias: 's', noun: 'a verification session of this list' });

/** The columns holding personal data: each sealed by the PII cipher, bound to its column and row. */
const SEALED = {
  idNumber: 'id_number_sealed',
  firstName: 'first_name_sealed',
  lastName: 'last_name_sealed',
  dateOfBirth: 'date_of_birth_sealed',
  nationality: 'nationality_sealed',
} as const;

export function sealContext(column: string, sessionId: string): string {
  return `verification_sessions.${column}:${sessionId}`;
}

interface SessionRow {
  id: string;
  user_id: string;
  tier: RequestedTier;
  status: SessionStatus;
  last_error_code: string | null;
  last_error_reason: string | null;
  attempts: number;
  submitted_at: Date | null;
  decided_at: Date | null;
  expires_at: Date;
  created_at: Date;
  updated_at: Date;
  reviewer_user_id: string | null;
  review_decision: 'approved' | 'rejected' | null;
  review_reason_code: string | null;
  review_note_sealed: string | null;
  rejection_kind: RejectionKind | null;
}

const COLUMNS = [
  'id', 'user_id', 'tier', 'status', 'last_error_code', 'last_error_reason', 'attempts', 'submitted_at', 'decided_at', 'expires_at',
  'created_at', 'updated_at', 'reviewer_user_id', 'review_decision', 'review_reason_code', 'review_note_sealed', 'rejection_kind',
].map((column) => `s.${column}`);

/** What a status change writes besides the status. */
export interface SessionChange {
  status: SessionStatus;
  lastError?: LastError | null;
  submittedAt?: Date;
  decidedAt?: Date;
  /** Personal data as submitted: sealed here, column by column. */
  details?: IdentityDetails;
  providerReference?: string;
  review?: Review;
  attempts?: number;
}

/** Verification sessions and their documents; personal data sealed on the way in, opened only by `detailsOf`. */
export class IdentityRepository {
  constructor(
    private readonly db: Db,
    private readonly cipher: PiiCipher,
  ) {}

  async insert(row: { userId: string; tier: RequestedTier; expiresAt: Date; now: Date }): Promise<VerificationSession> {
    const [inserted] = (await this.db('verification_sessions')
      .insert({ user_id: row.userId, tier: row.tier, status: 'requires_input', expires_at: row.expiresAt, created_at: row.now, updated_at: row.now })
      .returning('id')) as Array<{ id: string }>;
    return (await this.find((inserted as { id: string }).id)) as VerificationSession;
  }

  async find(id: string, options: { lock?: boolean } = {}): Promise<VerificationSession | undefined> {
    const query = this.db('verification_sessions as s').where('s.id', id).first(COLUMNS);
    if (options.lock) query.forUpdate();
    const row = (await query) as SessionRow | undefined;
    if (!row) return undefined;
    return (await this.withDocuments([row]))[0];
  }

  /** The user's open session (requires_input, processing or needs_review), if any. */
  async openSessionOf(userId: string): Promise<string | undefined> {
    const row = (await this.db('verification_sessions').where({ user_id: userId }).whereIn('status', ['requires_input', 'processing', 'needs_review']).first('id')) as { id: string } | undefined;
    return row?.id;
  }

  async hasFinalRejection(userId: string): Promise<boolean> {
    return (await this.db('verification_sessions').where({ user_id: userId, status: 'rejected', rejection_kind: 'final' }).first('id')) !== undefined;
  }

  /** The status of the user's latest session that was not canceled, if any. */
  async latestStatusOf(userId: string): Promise<SessionStatus | undefined> {
    const row = (await this.db('verification_sessions').where({ user_id: userId }).whereNot({ status: 'canceled' }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).first('status')) as { status: SessionStatus } | undefined;
    return row?.status;
  }

  async page(filter: { userId?: string; status?: SessionStatus }, request: PageRequest): Promise<VerificationSession[]> {
    const scope = { ...(filter.userId ? { user_id: filter.userId } : {}), ...(filter.status ? { status: filter.status } : {}) };
    const query = this.db('verification_sessions as s').where(Object.fromEntries(Object.entries(scope).map(([k, v]) => [`s.${k}`, v]))).select(COLUMNS);
    const rows = await SESSION_PAGES.rows<SessionRow>(this.db, query, scope, request);
    return this.withDocuments(rows);
  }

  async update(id: string, change: SessionChange, now: Date): Promise<void> {
    const values: Record<string, unknown> = { status: change.status, updated_at: now };
    if (change.lastError !== undefined) {
      values.last_error_code = change.lastError?.code ?? null;
      values.last_error_reason = change.lastError?.reason ?? null;
    }
    if (change.submittedAt) values.submitted_at = change.submittedAt;
    if (change.decidedAt) values.decided_at = change.decidedAt;
    if (change.providerReference !== undefined) values.provider_reference = change.providerReference;
    if (change.attempts !== undefined) values.attempts = change.attempts;
    if (change.status !== 'processing') values.processing_lease_until = null;
    if (change.details) {
      values.id_type = change.details.idType;
      for (const [field, column] of Object.entries(SEALED)) values[column] = this.cipher.sealText(change.details[field as keyof typeof SEALED], sealContext(column, id));
    }
    if (change.review) {
      values.reviewer_user_id = change.review.reviewerUserId;
      values.review_decision = change.review.decision;
      values.review_reason_code = change.review.reasonCode;
      values.rejection_kind = change.review.rejectionKind;
      values.review_note_sealed = change.review.note === null ? null : this.cipher.sealText(change.review.note, sealContext('review_note_sealed', id));
    }
    await this.db('verification_sessions').where({ id }).update(values);
  }

  /** The personal data submitted with a session, opened (for the provider); undefined when erased or never submitted. */
  async detailsOf(id: string): Promise<IdentityDetails | undefined> {
    const row = (await this.db('verification_sessions').where({ id }).first(['id_type', ...Object.values(SEALED)])) as Record<string, string | null> | undefined;
    if (!row || !row.id_type || Object.values(SEALED).some((column) => !row[column])) return undefined;
    const open = (column: string) => this.cipher.openText(row[column] as string, sealContext(column, id));
    return {
      idType: row.id_type as IdType,
      idNumber: open(SEALED.idNumber),
      firstName: open(SEALED.firstName),
      lastName: open(SEALED.lastName),
      dateOfBirth: open(SEALED.dateOfBirth),
      nationality: open(SEALED.nationality),
    };
  }

  async attachDocument(sessionId: string, kind: SessionDocumentKind, documentId: string, at: Date): Promise<void> {
    await this.db('verification_session_documents')
      .insert({ session_id: sessionId, kind, document_id: documentId, uploaded_at: at })
      .onConflict(['session_id', 'kind'])
      .merge(['document_id', 'uploaded_at']);
  }

  /**
   * Claims up to `limit` submitted sessions for the provider (SKIP LOCKED: one worker each),
   * leasing them for `leaseSeconds`: a worker that dies leaves them to the next run after that.
   */
  async claimDue(now: Date, leaseSeconds: number, limit: number): Promise<Array<{ id: string; tier: RequestedTier }>> {
    const result = (await this.db.raw(
      `UPDATE verification_sessions s SET processing_lease_until = ?::timestamptz + make_interval(secs => ?)
       WHERE s.id IN (SELECT id FROM verification_sessions WHERE status = 'processing' AND (processing_lease_until IS NULL OR processing_lease_until < ?)
         ORDER BY submitted_at, id LIMIT ? FOR UPDATE SKIP LOCKED)
       RETURNING s.id, s.tier`,
      [now, leaseSeconds, now, limit],
    )) as { rows: Array<{ id: string; tier: RequestedTier }> };
    return result.rows;
  }

  /** Sessions waiting for input past their expiry (locked, skipping those another worker holds). */
  async lockExpired(now: Date, limit: number): Promise<string[]> {
    const rows = (await this.db('verification_sessions').where({ status: 'requires_input' }).where('expires_at', '<=', now).orderBy('expires_at').limit(limit).forUpdate().skipLocked().select('id')) as Array<{ id: string }>;
    return rows.map((row) => row.id);
  }

  /** Erases the personal data of every session of a user (the decisions stay); returns the ids of those still open. */
  async erasePersonalData(userId: string, now: Date): Promise<void> {
    await this.db('verification_sessions')
      .where({ user_id: userId })
      .update({ ...Object.fromEntries(Object.values(SEALED).map((column) => [column, null])), review_note_sealed: null, personal_data_erased_at: now });
  }

  async tierOf(userId: string, options: { lock?: boolean } = {}): Promise<Tier | undefined> {
    const query = this.db('users').where({ id: userId }).first('tier');
    if (options.lock) query.forUpdate();
    const row = (await query) as { tier: Tier } | undefined;
    return row?.tier;
  }

  async setTier(userId: string, tier: Tier, now: Date): Promise<void> {
    await this.db('users').where({ id: userId }).update({ tier, updated_at: now });
  }

  private async withDocuments(rows: SessionRow[]): Promise<VerificationSession[]> {
    if (rows.length === 0) return [];
    const documents = (await this.db('verification_session_documents as d')
      .join('uploaded_documents as u', 'u.id', 'd.document_id')
      .whereIn('d.session_id', rows.map((row) => row.id))
      .orderBy('d.kind')
      .select('d.session_id', 'd.kind', 'd.document_id', 'd.uploaded_at', 'u.content_type', 'u.size_bytes')) as Array<{ session_id: string; kind: SessionDocumentKind; document_id: string; uploaded_at: Date; content_type: string; size_bytes: number }>;
    const bySession = new Map<string, SessionDocument[]>();
    for (const d of documents) {
      const list = bySession.get(d.session_id) ?? [];
      list.push({ kind: d.kind, documentId: d.document_id, contentType: d.content_type, sizeBytes: Number(d.size_bytes), uploadedAt: d.uploaded_at });
      bySession.set(d.session_id, list);
    }
    return rows.map((row) => this.toSession(row, bySession.get(row.id) ?? []));
  }

  private toSession(row: SessionRow, documents: SessionDocument[]): VerificationSession {
    return {
      id: row.id,
      userId: row.user_id,
      tier: row.tier,
      status: row.status,
      lastError: row.last_error_code ? { code: row.last_error_code, reason: row.last_error_reason ?? '' } : null,
      documents,
      attempts: Number(row.attempts),
      submittedAt: row.submitted_at,
      decidedAt: row.decided_at,
      expiresAt: row.expires_at,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      review:
        row.review_decision && row.reviewer_user_id
          ? {
              decision: row.review_decision,
              reviewerUserId: row.reviewer_user_id,
              reasonCode: row.review_reason_code,
              rejectionKind: row.rejection_kind,
              note: row.review_note_sealed ? this.cipher.openText(row.review_note_sealed, sealContext('review_note_sealed', row.id)) : null,
            }
          : null,
    };
  }
}
