import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../clock';
import type { Caller, PageRequest } from '../../contract';
import { setLocal, withTransaction } from '../../db/transaction';
import type { PiiCipher } from '../../pii-cipher';
import type { DocumentService } from '../documents';
import { EventRepository } from '../events';
import { AccountNotEmptyError, AdministratorsOnlyError, TierAlreadyHeldError, VerificationRefusedError, VerificationSessionNotFoundError, VerificationSessionOpenError } from './identity-errors';
import { SESSION_LIFECYCLE, type SessionAction, type SessionOutcome, type SessionParty } from './identity-lifecycle';
import type { IdentityProvider, ProviderOutcome } from './identity-provider';
import { IdentityRepository, type SessionChange } from './identity-repository';
import { TIER_ORDER, type IdentityDetails, type LastError, type RejectionKind, type RequestedTier, type SessionDocumentKind, type SessionStatus, type Tier, type VerificationSession } from './identity-types';

type Db = Knex | Knex.Transaction;

/** A session is open for 24 hours (Persona's pending inquiries expire after 24 h too). */
export const SESSION_LIFETIME_MS = 24 * 60 * 60 * 1000;
/** A session handed to the provider is leased this long: a worker that dies leaves it to the next run after. */
const PROVIDER_LEASE_SECONDS = 120;
/** Sessions handed to the provider, or expired, per run. */
const BATCH = 20;

/** The reason codes an administrator's rejection may give; only those the person can act on are shown to them. */
export const REJECTION_REASONS = {
  document_unreadable: 'The identity document could not be read: upload a sharp, complete picture.',
  document_expired: 'The identity document has expired: use a valid one.',
  document_mismatch: 'The document does not match the details you entered: check them.',
  selfie_mismatch: 'The selfie does not match the document photo: take a new one.',
  information_mismatch: 'The details you entered could not be confirmed: check them.',
  unsupported_document: 'This kind of document is not accepted: use a national ID card, passport, residence permit or driving licence.',
  suspected_fraud: null,
  watchlist_match: null,
  other: null,
} as const satisfies Record<string, string | null>;
export type RejectionReason = keyof typeof REJECTION_REASONS;

/** What the person is told when the reason is not theirs to act on (never a watch-list or PEP hint). */
const GENERIC_ERROR: LastError = { code: 'verification_failed', reason: 'Your identity could not be verified with what was submitted.' };
const REFUSED_ERROR: LastError = { code: 'verification_refused', reason: 'Your identity verification was refused.' };

export interface IdentityServiceDeps {
  knex: Knex;
  cipher: PiiCipher;
  documents: DocumentService;
  provider: IdentityProvider;
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'error' | 'info'>;
}

/** What an event of a session carries: status and tier, never personal data. */
function eventObject(session: Pick<VerificationSession, 'id' | 'tier' | 'status'>) {
  return { id: session.id, object: 'verification_session', tier: session.tier, status: session.status };
}

/**
 * Identity verification (KYC): sessions asking for a tier, what the person submits (sealed at
 * rest), the provider's answer (on the job queue, never in the request), an administrator's
 * review, and the tier it lifts. Every change of status writes its event
 * `identity.verification_session.<status>` in the same transaction; a tier lifted writes
 * `user.tier_updated`. Personal data never reaches an event, a log line or an error.
 */
export class IdentityService {
  constructor(private readonly deps: IdentityServiceDeps) {}

  private repo(db: Db): IdentityRepository {
    return new IdentityRepository(db, this.deps.cipher);
  }

  async create(trx: Knex.Transaction, caller: Caller, tier: RequestedTier): Promise<VerificationSession> {
    const repo = this.repo(trx);
    const current = await repo.tierOf(caller.userId, { lock: true });
    if (!current) throw new VerificationSessionNotFoundError();
    if (TIER_ORDER[current] >= TIER_ORDER[tier]) throw new TierAlreadyHeldError(current);
    if (await repo.hasFinalRejection(caller.userId)) throw new VerificationRefusedError();
    const open = await repo.openSessionOf(caller.userId);
    if (open) throw new VerificationSessionOpenError(open);
    const now = this.deps.clock();
    return repo.insert({ userId: caller.userId, tier, expiresAt: new Date(now.getTime() + SESSION_LIFETIME_MS), now });
  }

  list(userId: string, request: PageRequest): Promise<VerificationSession[]> {
    return this.repo(this.deps.knex).page({ userId }, request);
  }

  async get(caller: Caller, id: string, db: Db = this.deps.knex): Promise<VerificationSession> {
    const session = await this.repo(db).find(id);
    if (!session || session.userId !== caller.userId) throw new VerificationSessionNotFoundError();
    return session;
  }

  /** Stores one document of a tier_2 session (replacing one of the same kind). */
  async uploadDocument(trx: Knex.Transaction, caller: Caller, id: string, kind: SessionDocumentKind, bytes: Buffer): Promise<VerificationSession> {
    const session = await this.locked(trx, caller, id);
    SESSION_LIFECYCLE.assertAllowed('upload_document', this.context(session, caller));
    const stored = await this.deps.documents.store(trx, { ownerType: 'user', ownerId: caller.userId, kind, bytes });
    const repo = this.repo(trx);
    await repo.attachDocument(id, kind, stored.id, this.deps.clock());
    return (await repo.find(id)) as VerificationSession;
  }

  /** Seals the details and hands the session to the provider's queue (`processing`). */
  async submit(trx: Knex.Transaction, caller: Caller, id: string, details: IdentityDetails): Promise<VerificationSession> {
    const session = await this.locked(trx, caller, id);
    const now = this.deps.clock();
    return this.change(trx, session, 'submit', this.context(session, caller), undefined, {
      lastError: null,
      submittedAt: now,
      details,
      attempts: session.attempts + 1,
    }, caller.userId);
  }

  async cancel(trx: Knex.Transaction, caller: Caller, id: string): Promise<VerificationSession> {
    const session = await this.locked(trx, caller, id);
    return this.change(trx, session, 'cancel', this.context(session, caller), undefined, { decidedAt: this.deps.clock() }, caller.userId);
  }

  /** Every session with `status` (administrators). */
  adminList(caller: Caller, status: SessionStatus | undefined, request: PageRequest): Promise<VerificationSession[]> {
    if (!caller.isAdmin) throw new AdministratorsOnlyError();
    return this.repo(this.deps.knex).page({ status }, request);
  }

  async approve(trx: Knex.Transaction, caller: Caller, id: string, note: string | null): Promise<VerificationSession> {
    const session = await this.lockedForReview(trx, caller, id);
    const now = this.deps.clock();
    return this.change(trx, session, 'approve', this.context(session, caller), undefined, {
      lastError: null,
      decidedAt: now,
      review: { decision: 'approved', reviewerUserId: caller.userId, reasonCode: null, rejectionKind: null, note },
    }, caller.userId);
  }

  async reject(trx: Knex.Transaction, caller: Caller, id: string, input: { reasonCode: RejectionReason; note: string | null; kind: RejectionKind }): Promise<VerificationSession> {
    const session = await this.lockedForReview(trx, caller, id);
    const shown = REJECTION_REASONS[input.reasonCode];
    const lastError = input.kind === 'final' ? REFUSED_ERROR : shown ? { code: input.reasonCode, reason: shown } : GENERIC_ERROR;
    return this.change(trx, session, 'reject', this.context(session, caller), input.kind, {
      lastError,
      decidedAt: this.deps.clock(),
      review: { decision: 'rejected', reviewerUserId: caller.userId, reasonCode: input.reasonCode, rejectionKind: input.kind, note: input.note },
    }, caller.userId);
  }

  /** The person's tier and where their verification stands (`unverified` before any session; `verified` for a tier held without one). */
  async standingOf(userId: string, db: Db = this.deps.knex): Promise<{ tier: Tier; verificationStatus: SessionStatus | 'unverified' }> {
    const repo = this.repo(db);
    const [tier, latest] = await Promise.all([repo.tierOf(userId), repo.latestStatusOf(userId)]);
    const held = tier ?? 'tier_0';
    return { tier: held, verificationStatus: latest ?? (held === 'tier_0' ? 'unverified' : 'verified') };
  }

  /**
   * The processing job's work: claims submitted sessions (a lease, SKIP LOCKED), asks the
   * provider for each outside any transaction, and records each answer in a transaction of its
   * own (if the session is still processing: a cancel or a second worker may have come first).
   * Returns how many sessions were settled.
   */
  async processDue(): Promise<number> {
    const claimed = await withTransaction(this.deps.knex, (trx) => this.repo(trx).claimDue(this.deps.clock(), PROVIDER_LEASE_SECONDS, BATCH));
    let settled = 0;
    for (const { id, tier } of claimed) {
      try {
        const outcome = await this.askProvider(id, tier);
        if (outcome && (await this.recordOutcome(id, outcome))) settled += 1;
      } catch (err) {
        // The error names the session, never its data; the lease expires and a later run tries again.
        this.deps.logger.error({ err: { name: (err as Error).name }, sessionId: id }, 'identity provider check failed; the session is tried again after its lease');
      }
    }
    return settled;
  }

  /** The expiry job's work: sessions still waiting for input after 24 hours are canceled. Returns how many. */
  async expireDue(): Promise<number> {
    return withTransaction(this.deps.knex, async (trx) => {
      const repo = this.repo(trx);
      const now = this.deps.clock();
      const ids = await repo.lockExpired(now, BATCH);
      for (const id of ids) {
        const session = (await repo.find(id)) as VerificationSession;
        await this.change(trx, session, 'expire', { status: session.status, session, parties: new Set(), now }, undefined, {
          decidedAt: now,
          lastError: { code: 'session_expired', reason: 'The session was not submitted within 24 hours: start a new one.' },
        }, null);
      }
      return ids.length;
    });
  }

  /**
   * Closes the caller's account (409 AccountNotEmpty while a wallet holds money or an escrow or
   * tontine is open): sessions ended, identifiers, submitted identity data and documents
   * erased; ledger entries and verification decisions kept.
   */
  async closeAccount(trx: Knex.Transaction, caller: Caller, endSessions: (userId: string, trx: Knex.Transaction) => Promise<unknown>): Promise<{ id: string; status: 'closed'; closedAt: Date }> {
    const userId = caller.userId;
    await trx('users').where({ id: userId }).forUpdate().first('id');
    const [wallets, escrows, tontines] = await Promise.all([
      trx('ledger_accounts').where({ owner_type: 'user', owner_id: userId, kind: 'wallet' }).whereNot('balance_minor', 0).orderBy('currency').pluck('currency') as Promise<string[]>,
      trx('escrows').where((q) => q.where('buyer_user_id', userId).orWhere('seller_user_id', userId)).whereIn('status', ['awaiting_funding', 'funded', 'delivered', 'disputed']).count<Array<{ count: string }>>('* as count'),
      trx('tontine_members as m').join('tontines as t', 't.id', 'm.tontine_id').where('m.user_id', userId).whereIn('t.status', ['forming', 'active']).count<Array<{ count: string }>>('* as count'),
    ]);
    const openEscrows = Number(escrows[0]?.count ?? 0);
    const openTontines = Number(tontines[0]?.count ?? 0);
    if (wallets.length > 0 || openEscrows > 0 || openTontines > 0) throw new AccountNotEmptyError({ wallets_with_balance: wallets, open_escrows: openEscrows, open_tontines: openTontines });
    const now = this.deps.clock();
    const repo = this.repo(trx);
    const open = await repo.openSessionOf(userId);
    if (open) {
      const session = (await repo.find(open, { lock: true })) as VerificationSession;
      await this.change(trx, session, 'cancel', { status: 'requires_input', session, parties: new Set(['owner']), now }, undefined, { decidedAt: now }, userId, true);
    }
    await repo.erasePersonalData(userId, now);
    await this.deps.documents.eraseAllOf(trx, 'user', userId);
    await endSessions(userId, trx);
    // The keys this person holds are revoked with the closing (a trigger), naming them as its actor.
    await setLocal(trx, { 'app.actor_user_id': userId });
    await trx('users').where({ id: userId }).update({ status: 'closed', closed_at: now, email: null, phone: null, display_name: null, password_hash: '!closed', updated_at: now });
    return { id: userId, status: 'closed', closedAt: now };
  }

  private async askProvider(id: string, tier: RequestedTier): Promise<ProviderOutcome | undefined> {
    const db = this.deps.knex;
    const [details, session] = await Promise.all([this.repo(db).detailsOf(id), this.repo(db).find(id)]);
    if (!details || !session || session.status !== 'processing') return undefined;
    const documents = [];
    for (const document of session.documents) {
      const bytes = await this.deps.documents.read(db, document.documentId);
      if (bytes) documents.push({ kind: document.kind, contentType: document.contentType, bytes });
    }
    return this.deps.provider.check({ sessionId: id, tier, details, documents });
  }

  private async recordOutcome(id: string, outcome: ProviderOutcome): Promise<boolean> {
    return withTransaction(this.deps.knex, async (trx) => {
      const session = await this.repo(trx).find(id, { lock: true });
      if (!session || session.status !== 'processing') return false;
      const now = this.deps.clock();
      const change: Omit<SessionChange, 'status'> = { providerReference: outcome.reference };
      if (outcome.outcome === 'requires_input') change.lastError = { code: outcome.code, reason: outcome.reason };
      if (outcome.outcome === 'verified') change.decidedAt = now;
      await this.change(trx, session, 'resolve', { status: session.status, session, parties: new Set(), now }, outcome.outcome, change, null);
      return true;
    });
  }

  /** Checks `action`, writes the status it leads to, its event, and the tier it lifts (verified). */
  private async change(
    trx: Knex.Transaction,
    session: VerificationSession,
    action: SessionAction,
    context: Parameters<typeof SESSION_LIFECYCLE.next>[1],
    outcome: SessionOutcome | undefined,
    change: Omit<SessionChange, 'status'>,
    actorUserId: string | null,
    checked = false,
  ): Promise<VerificationSession> {
    const status = checked ? SESSION_LIFECYCLE.target(action, outcome) : SESSION_LIFECYCLE.next(action, context, outcome);
    const now = this.deps.clock();
    const repo = this.repo(trx);
    await repo.update(session.id, { ...change, status }, now);
    const events = new EventRepository(trx);
    const eventType = status === 'canceled' ? 'canceled' : status;
    await events.record({
      subjectType: 'verification_session',
      subjectId: session.id,
      type: `identity.verification_session.${eventType}`,
      actorUserId,
      occurredAt: now,
      object: eventObject({ ...session, status }),
      previousStatus: session.status,
    });
    if (status === 'verified') await this.liftTier(trx, session.userId, session.tier, actorUserId, now);
    return (await repo.find(session.id)) as VerificationSession;
  }

  private async liftTier(trx: Knex.Transaction, userId: string, tier: RequestedTier, actorUserId: string | null, now: Date): Promise<void> {
    const repo = this.repo(trx);
    const current = (await repo.tierOf(userId, { lock: true })) ?? 'tier_0';
    if (TIER_ORDER[current] >= TIER_ORDER[tier]) return;
    await repo.setTier(userId, tier, now);
    await new EventRepository(trx).record({
      subjectType: 'user',
      subjectId: userId,
      type: 'user.tier_updated',
      actorUserId,
      occurredAt: now,
      object: { id: userId, object: 'user', tier, previous_tier: current },
      previousStatus: null,
    });
  }

  private async locked(trx: Knex.Transaction, caller: Caller, id: string): Promise<VerificationSession> {
    const session = await this.repo(trx).find(id, { lock: true });
    if (!session || session.userId !== caller.userId) throw new VerificationSessionNotFoundError();
    return session;
  }

  private async lockedForReview(trx: Knex.Transaction, caller: Caller, id: string): Promise<VerificationSession> {
    if (!caller.isAdmin) throw new AdministratorsOnlyError();
    const session = await this.repo(trx).find(id, { lock: true });
    if (!session) throw new VerificationSessionNotFoundError();
    return session;
  }

  private context(session: VerificationSession, caller: Caller) {
    const parties = new Set<SessionParty>();
    if (session.userId === caller.userId) parties.add('owner');
    if (caller.isAdmin) parties.add('administrator');
    return { status: session.status, session, parties, now: this.deps.clock() };
  }
}
