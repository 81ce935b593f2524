import type { Knex } from 'knex';
import { Keyset } from '../../db/keyset';
import { queryPrepared } from '../../db/prepared';
import type { AuthorizedOrganization, ModuleAccess, ModuleName, Role } from '../../contract';

/** What other modules may read of an organisation: its name, its status and its modules' access. */
export type OrganizationProfile = Omit<AuthorizedOrganization, 'role'>;

interface ProfileRow {
  id: string;
  name: string;
  status: AuthorizedOrganization['status'];
  role: Role;
  modules: Partial<Record<ModuleName, ModuleAccess>> | string | null;
}

interface MembershipRow extends ProfileRow {
  role: Role;
}

/** The organisation's modules and their access, as one JSON object (`{}` when none is enabled). */
const MODULES_JSON = `(SELECT coalesce(json_object_agg(om.module, om.access), '{}'::json)
   FROM organization_modules om WHERE om.organization_id = o.id) AS modules`;

/** The organisation `$1` with the role of its active member `$2`. */
const FOR_MEMBER_SQL = `SELECT o.id, o.name, o.status, m.role, ${MODULES_JSON}
  FROM organizations o JOIN memberships m ON m.organization_id = o.id AND m.user_id = $2 AND m.status = 'active'
  WHERE o.id = $1 LIMIT 1`;

function moduleAccessOf(row: ProfileRow): AuthorizedOrganization['moduleAccess'] {
  const modules = typeof row.modules === 'string' ? (JSON.parse(row.modules) as ProfileRow['modules']) : row.modules;
  return (modules ?? {}) as AuthorizedOrganization['moduleAccess'];
}

/** An organisation where a user is an active member, with the user's role in it. */
export interface MemberOrganization {
  id: string;
  name: string;
  status: AuthorizedOrganization['status'];
  role: Role;
}

export class OrganizationRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /**
   * The organisation, the user's active membership in it and its modules, in one query;
   * undefined when the organisation does not exist or the user is not an active member.
   */
  async findForMember(organizationId: string, userId: string): Promise<AuthorizedOrganization | undefined> {
    // Every Business request runs it: prepared, not built by knex, so it costs one parse per connection.
    const [row] = await queryPrepared<MembershipRow>(this.db, 'organization_for_member', FOR_MEMBER_SQL, [organizationId, userId]);
    if (!row) return undefined;
    return { id: row.id, name: row.name, status: row.status, role: row.role, moduleAccess: moduleAccessOf(row) };
  }

  /** The profiles of the organisations, by id (unknown ids are absent), in one query. */
  async findProfiles(organizationIds: readonly string[]): Promise<Map<string, OrganizationProfile>> {
    if (organizationIds.length === 0) return new Map();
    const rows = (await this.db('organizations as o')
      .whereIn('o.id', [...new Set(organizationIds)])
      .select('o.id', 'o.name', 'o.status', this.db.raw(MODULES_JSON))) as ProfileRow[];
    return new Map(rows.map((row) => [row.id, { id: row.id, name: row.name, status: row.status, moduleAccess: moduleAccessOf(row) }]));
  }

  /** Organisations where the user is an active member, by name. */
  async listActiveForMember(userId: string): Promise<MemberOrganization[]> {
    return this.db('memberships as m')
      .join('organizations as o', 'o.id', 'm.organization_id')
      .where({ 'm.user_id': userId, 'm.status': 'active' })
      .orderBy([{ column: 'o.name' }, { column: 'o.id' }])
      .select<MemberOrganization[]>('o.id', 'o.name', 'o.status', 'm.role');
  }
}

export type LegalForm = 'sole_proprietorship' | 'company' | 'association';
export type VerificationStatus = 'unverified' | 'pending' | 'verified' | 'rejected';
export type VerificationRequirement = 'registration_document' | 'representative';

/** The legal fields an owner may correct when submitting the verification (absent: kept). */
export interface LegalCorrection {
  legalName?: string;
  registrationNumber?: string;
  legalForm?: LegalForm;
  country?: string;
}

/** An organisation's whole row (profile, verification) with its modules. */
export interface OrganizationRecord {
  id: string;
  name: string;
  status: AuthorizedOrganization['status'];
  legalName: string;
  tradingName: string | null;
  country: string | null;
  registrationNumber: string | null;
  legalForm: LegalForm | null;
  defaultCurrency: string | null;
  supportEmail: string | null;
  supportPhone: string | null;
  verificationStatus: VerificationStatus;
  verificationSubmittedAt: Date | null;
  verificationDecidedAt: Date | null;
  verificationRejectionReason: string | null;
  verificationRejectedRequirement: VerificationRequirement | null;
  verificationRepresentativeUserId: string | null;
  moduleAccess: AuthorizedOrganization['moduleAccess'];
  createdAt: Date;
}

interface OrganizationRow {
  id: string;
  name: string;
  status: AuthorizedOrganization['status'];
  legal_name: string | null;
  trading_name: string | null;
  country: string | null;
  registration_number: string | null;
  legal_form: LegalForm | null;
  default_currency: string | null;
  support_email: string | null;
  support_phone: string | null;
  verification_status: VerificationStatus;
  verification_submitted_at: Date | null;
  verification_decided_at: Date | null;
  verification_rejection_reason: string | null;
  verification_rejected_requirement: VerificationRequirement | null;
  verification_representative_user_id: string | null;
  modules: ProfileRow['modules'];
  created_at: Date;
}

function toOrganizationRecord(row: OrganizationRow): OrganizationRecord {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    legalName: row.legal_name ?? row.name,
    tradingName: row.trading_name,
    country: row.country,
    registrationNumber: row.registration_number,
    legalForm: row.legal_form,
    defaultCurrency: row.default_currency,
    supportEmail: row.support_email,
    supportPhone: row.support_phone,
    verificationStatus: row.verification_status,
    verificationSubmittedAt: row.verification_submitted_at,
    verificationDecidedAt: row.verification_decided_at,
    verificationRejectionReason: row.verification_rejection_reason,
    verificationRejectedRequirement: row.verification_rejected_requirement,
    verificationRepresentativeUserId: row.verification_representative_user_id,
    moduleAccess: moduleAccessOf(row as unknown as ProfileRow),
    createdAt: new Date(row.created_at),
  };
}

/** Reads and writes of organisations' profiles and verification (the settings routes, KYB). */
export class OrganizationProfileRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  private select(): Knex.QueryBuilder {
    return this.db('organizations as o').select('o.*', this.db.raw(MODULES_JSON));
  }

  async find(organizationId: string, options: { forUpdate?: boolean } = {}): Promise<OrganizationRecord | undefined> {
    if (options.forUpdate) await this.db('organizations').where({ id: organizationId }).forUpdate().first('id');
    const row = (await this.select().where('o.id', organizationId).first()) as OrganizationRow | undefined;
    return row ? toOrganizationRecord(row) : undefined;
  }

  async insert(input: {
    legalName: string;
    tradingName: string | null;
    country: string;
    registrationNumber: string;
    legalForm: LegalForm;
    defaultCurrency: string;
    createdBy: string;
    now: Date;
  }): Promise<string> {
    const [row] = (await this.db('organizations')
      .insert({
        name: input.tradingName ?? input.legalName,
        status: 'active',
        legal_name: input.legalName,
        trading_name: input.tradingName,
        country: input.country,
        registration_number: input.registrationNumber,
        legal_form: input.legalForm,
        default_currency: input.defaultCurrency,
        created_by: input.createdBy,
        created_at: input.now,
        updated_at: input.now,
      })
      .returning('id')) as Array<{ id: string }>;
    return (row as { id: string }).id;
  }

  async enableModules(organizationId: string, modules: readonly ModuleName[]): Promise<void> {
    if (modules.length === 0) return;
    await this.db('organization_modules').insert(modules.map((module) => ({ organization_id: organizationId, module, access: 'open' })));
  }

  /** Changes the given columns (snake_case values are mapped here); `name` follows the trading name. */
  async updateProfile(organizationId: string, change: { tradingName?: string; supportEmail?: string | null; supportPhone?: string | null }, now: Date): Promise<void> {
    const values: Record<string, unknown> = { updated_at: now };
    if (change.tradingName !== undefined) Object.assign(values, { trading_name: change.tradingName, name: change.tradingName });
    if (change.supportEmail !== undefined) values.support_email = change.supportEmail;
    if (change.supportPhone !== undefined) values.support_phone = change.supportPhone;
    await this.db('organizations').where({ id: organizationId }).update(values);
  }

  /** Corrects the legal fields given (through a verification submission); `name` follows the legal name while there is no trading name. */
  async updateLegalProfile(organizationId: string, change: LegalCorrection, now: Date): Promise<void> {
    const values: Record<string, unknown> = { updated_at: now };
    if (change.legalName !== undefined) Object.assign(values, { legal_name: change.legalName, name: this.db.raw('COALESCE(trading_name, ?)', [change.legalName]) });
    if (change.registrationNumber !== undefined) values.registration_number = change.registrationNumber;
    if (change.legalForm !== undefined) values.legal_form = change.legalForm;
    if (change.country !== undefined) values.country = change.country;
    await this.db('organizations').where({ id: organizationId }).update(values);
  }

  async updateVerification(
    organizationId: string,
    change: {
      status: VerificationStatus;
      submittedAt?: Date;
      decidedAt: Date | null;
      decidedBy?: string | null;
      rejectionReason?: string | null;
      rejectedRequirement?: VerificationRequirement | null;
      representativeUserId?: string;
      documentId?: string;
    },
  ): Promise<void> {
    const values: Record<string, unknown> = {
      verification_status: change.status,
      verification_decided_at: change.decidedAt,
      updated_at: change.submittedAt ?? change.decidedAt ?? new Date(),
    };
    if (change.submittedAt !== undefined) values.verification_submitted_at = change.submittedAt;
    if (change.decidedBy !== undefined) values.verification_decided_by = change.decidedBy;
    if (change.rejectionReason !== undefined) values.verification_rejection_reason = change.rejectionReason;
    if (change.rejectedRequirement !== undefined) values.verification_rejected_requirement = change.rejectedRequirement;
    if (change.representativeUserId !== undefined) values.verification_representative_user_id = change.representativeUserId;
    if (change.documentId !== undefined) values.verification_document_id = change.documentId;
    await this.db('organizations').where({ id: organizationId }).update(values);
  }

  /** Organisations whose verification has `status`, newest first (the administrators' queue). */
  async listByVerification(status: VerificationStatus, page: { limit: number; startingAfter?: string }): Promise<OrganizationRecord[]> {
    const rows = (await ORGANIZATIONS.rows(this.db, this.select().where('o.verification_status', status), { verification_status: status }, page)) as OrganizationRow[];
    return rows.map(toOrganizationRecord);
  }
}

const ORGANIZATIONS = new Keyset({ table: 'organizations', alias: 'o', noun: 'an organisation of this list' });
