import type { Knex } from 'knex';
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
    // Every Business request runs it: prepared, not built by knex (issue 21).
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
