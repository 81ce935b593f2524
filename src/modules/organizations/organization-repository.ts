import type { Knex } from 'knex';
import type { AuthorizedOrganization, ModuleAccess, ModuleName, Role } from '../../contract';

interface MembershipRow {
  id: string;
  name: string;
  status: AuthorizedOrganization['status'];
  role: Role;
  modules: Partial<Record<ModuleName, ModuleAccess>> | string | null;
}

export class OrganizationRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /**
   * The organisation, the user's active membership in it and its modules, in one query;
   * undefined when the organisation does not exist or the user is not an active member.
   */
  async findForMember(organizationId: string, userId: string): Promise<AuthorizedOrganization | undefined> {
    const row = await this.db('organizations as o')
      .join('memberships as m', (join) => {
        join.on('m.organization_id', 'o.id').andOnVal('m.user_id', userId).andOnVal('m.status', 'active');
      })
      .where('o.id', organizationId)
      .first<MembershipRow | undefined>(
        'o.id',
        'o.name',
        'o.status',
        'm.role',
        this.db.raw(
          `(SELECT coalesce(json_object_agg(om.module, om.access), '{}'::json)
              FROM organization_modules om WHERE om.organization_id = o.id) AS modules`,
        ),
      );
    if (!row) return undefined;
    const modules = typeof row.modules === 'string' ? (JSON.parse(row.modules) as MembershipRow['modules']) : row.modules;
    return { id: row.id, name: row.name, status: row.status, role: row.role, moduleAccess: (modules ?? {}) as AuthorizedOrganization['moduleAccess'] };
  }
}
