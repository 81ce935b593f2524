import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import { toListPage, type Caller, type ListPage, type PageRequest } from '../../contract';
import { isCountryCode } from '../../domain/country-code';
import { ValidationError } from '../../errors';
import { EventRepository } from '../events';
import {
  InsufficientRoleError,
  OrganizationConflictOfInterestError,
  OrganizationNotFoundError,
  RepresentativeNotVerifiedError,
  VerificationAlreadySubmittedError,
  VerificationNotPendingError,
} from './organization-errors';
import { MembershipRepository } from './membership-repository';
import { presentOrganization, type OrganizationView } from './organization-presenter';
import { OrganizationProfileRepository, type LegalCorrection, type OrganizationRecord, type VerificationRequirement, type VerificationStatus } from './organization-repository';
import type { VerificationProvider } from './verification-provider';

/** The identity tier a representative needs. */
export const REPRESENTATIVE_TIER = 'tier_2';

export interface VerificationServiceDeps {
  knex: Knex;
  clock?: Clock;
  provider: VerificationProvider;
  /** The identity tier of a user (the identity module), in the caller's transaction. */
  tierOf: (trx: Knex.Transaction, userId: string) => Promise<string | null>;
  /** Stores the organisation's registration document, checked and encrypted (the documents module); its id. */
  storeRegistrationDocument: (trx: Knex.Transaction, organizationId: string, bytes: Buffer) => Promise<string>;
}

/**
 * Business verification (KYB): the owner submits the registration document and a verified
 * representative; the provider decides at once (sandbox test numbers) or an administrator who
 * is not a member of the organisation does. Every status change is an
 * `organization.verification_updated` event with its actor (null for the provider).
 */
export class VerificationService {
  private readonly clock: Clock;

  constructor(private readonly deps: VerificationServiceDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /**
   * Submits the verification, applying the legal fields the owner corrects first (only here do
   * they change, while `unverified` or `rejected`); the event names what they replaced
   * (`previous_attributes`), and the provider decides on the corrected profile.
   */
  async submit(trx: Knex.Transaction, organizationId: string, actorUserId: string, input: { document: Buffer; representativeUserId: string; corrections?: LegalCorrection }): Promise<OrganizationView> {
    const now = this.clock();
    const country = input.corrections?.country;
    if (country !== undefined && !isCountryCode(country)) throw ValidationError.field('body.country', `country ${country} is not an ISO 3166-1 alpha-2 country code.`);
    const profiles = new OrganizationProfileRepository(trx);
    const before = await this.mustFind(profiles, organizationId);
    if (before.verificationStatus === 'pending' || before.verificationStatus === 'verified') throw new VerificationAlreadySubmittedError(before.verificationStatus);
    const representative = await new MembershipRepository(trx).find(organizationId, input.representativeUserId);
    if (!representative || representative.status !== 'active' || (await this.deps.tierOf(trx, input.representativeUserId)) !== REPRESENTATIVE_TIER) {
      throw new RepresentativeNotVerifiedError();
    }
    const documentId = await this.deps.storeRegistrationDocument(trx, organizationId, input.document);
    const replaced = correctedFields(before, input.corrections ?? {});
    if (Object.keys(replaced).length > 0) await profiles.updateLegalProfile(organizationId, trimmed(input.corrections ?? {}), now);
    await profiles.updateVerification(organizationId, {
      status: 'pending',
      submittedAt: now,
      decidedAt: null,
      decidedBy: null,
      rejectionReason: null,
      rejectedRequirement: null,
      representativeUserId: input.representativeUserId,
      documentId,
    });
    let view = await this.recordChange(trx, profiles, organizationId, actorUserId, before.verificationStatus, now, replaced);
    const decision = this.deps.provider.decide({ registrationNumber: view.registration_number, country: view.country });
    if (decision.status !== 'pending') {
      view = await this.decideWithin(trx, profiles, organizationId, null, decision.status, decision.status === 'rejected' ? { requirement: 'registration_document', reason: decision.reason } : undefined, now);
    }
    return view;
  }

  async list(caller: Pick<Caller, 'isAdmin'>, status: VerificationStatus, page: PageRequest): Promise<ListPage<OrganizationView>> {
    if (!caller.isAdmin) throw new InsufficientRoleError();
    const rows = await new OrganizationProfileRepository(this.deps.knex).listByVerification(status, page);
    return toListPage(rows.map(presentOrganization), page.limit);
  }

  /** An administrator's decision on a pending verification; never by a member of the organisation. */
  async decide(
    trx: Knex.Transaction,
    caller: Pick<Caller, 'userId' | 'isAdmin'>,
    organizationId: string,
    status: 'verified' | 'rejected',
    rejection?: { requirement?: VerificationRequirement; reason: string },
  ): Promise<OrganizationView> {
    if (!caller.isAdmin) throw new InsufficientRoleError();
    const now = this.clock();
    const profiles = new OrganizationProfileRepository(trx);
    const current = await this.mustFind(profiles, organizationId);
    if (await new MembershipRepository(trx).find(organizationId, caller.userId)) throw new OrganizationConflictOfInterestError();
    if (current.verificationStatus !== 'pending') throw new VerificationNotPendingError();
    return this.decideWithin(trx, profiles, organizationId, caller.userId, status, rejection && { requirement: rejection.requirement ?? 'registration_document', reason: rejection.reason }, now);
  }

  private async decideWithin(
    trx: Knex.Transaction,
    profiles: OrganizationProfileRepository,
    organizationId: string,
    actorUserId: string | null,
    status: 'verified' | 'rejected',
    rejection: { requirement: VerificationRequirement; reason: string } | undefined,
    now: Date,
  ): Promise<OrganizationView> {
    await profiles.updateVerification(organizationId, {
      status,
      decidedAt: now,
      decidedBy: actorUserId,
      rejectionReason: rejection?.reason ?? null,
      rejectedRequirement: rejection?.requirement ?? null,
    });
    return this.recordChange(trx, profiles, organizationId, actorUserId, 'pending', now);
  }

  private async recordChange(
    trx: Knex.Transaction,
    profiles: OrganizationProfileRepository,
    organizationId: string,
    actorUserId: string | null,
    previous: VerificationStatus,
    now: Date,
    replaced: Record<string, string | null> = {},
  ): Promise<OrganizationView> {
    const view = presentOrganization(await this.mustFind(profiles, organizationId));
    await new EventRepository(trx).record({
      type: 'organization.verification_updated',
      subjectType: 'organization',
      subjectId: organizationId,
      organizationId,
      actorUserId,
      object: view,
      payload: { verification_status: view.verification.status, previous_verification_status: previous, ...(Object.keys(replaced).length > 0 ? { corrected: replaced } : {}) },
      previousStatus: view.status,
      occurredAt: now,
      extraData: Object.keys(replaced).length > 0 ? { previous_attributes: replaced } : undefined,
    });
    return view;
  }

  private async mustFind(profiles: OrganizationProfileRepository, organizationId: string): Promise<OrganizationRecord> {
    const record = await profiles.find(organizationId, { forUpdate: true });
    if (!record) throw new OrganizationNotFoundError();
    return record;
  }
}

function trimmed(change: LegalCorrection): LegalCorrection {
  return { ...change, legalName: change.legalName?.trim(), registrationNumber: change.registrationNumber?.trim() };
}

/** The contract's names of the legal fields a correction changes, with their values before it (a field sent unchanged is no correction). */
function correctedFields(before: OrganizationRecord, change: LegalCorrection): Record<string, string | null> {
  const next = trimmed(change);
  const fields: [string, string | null, string | undefined][] = [
    ['legal_name', before.legalName, next.legalName],
    ['registration_number', before.registrationNumber, next.registrationNumber],
    ['legal_form', before.legalForm, next.legalForm],
    ['country', before.country, next.country],
  ];
  return Object.fromEntries(fields.filter(([, was, value]) => value !== undefined && value !== was).map(([name, was]) => [name, was]));
}
