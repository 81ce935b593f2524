import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import type { Role } from '../../contract';
import { isUuid } from '../../ids';

type Db = Knex | Knex.Transaction;

/** A membership with its user's identifier (e-mail, or telephone when none). */
export interface MemberRecord {
  id: string;
  organizationId: string;
  userId: string;
  identifier: string;
  role: Role;
  status: 'active' | 'invited' | 'suspended';
  joinedAt: Date;
}

export type InvitationStatus = 'pending' | 'accepted' | 'declined' | 'revoked';

export interface InvitationRecord {
  id: string;
  organizationId: string;
  organizationName: string;
  identifier: string;
  role: Role;
  status: InvitationStatus;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  respondedAt: Date | null;
  respondedBy: string | null;
}

interface MemberRow {
  id: string;
  organization_id: string;
  user_id: string;
  email: string | null;
  phone: string | null;
  role: Role;
  status: MemberRecord['status'];
  created_at: Date;
}

interface InvitationRow {
  id: string;
  organization_id: string;
  organization_name: string;
  identifier: string;
  role: Role;
  status: InvitationStatus;
  invited_by: string;
  created_at: Date;
  expires_at: Date;
  responded_at: Date | null;
  responded_by: string | null;
}

function toMember(row: MemberRow): MemberRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    identifier: row.email ?? row.phone ?? row.user_id,
    role: row.role,
    status: row.status,
    joinedAt: new Date(row.created_at),
  };
}

function toInvitation(row: InvitationRow): InvitationRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    organizationName: row.organization_name,
    identifier: row.identifier,
    role: row.role,
    status: row.status,
    invitedBy: row.invited_by,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    respondedAt: row.responded_at === null ? null : new Date(row.responded_at),
    respondedBy: row.responded_by,
  };
}

const MEMBERS = new Keyset({ table: 'memberships', alias: 'm', noun: 'a member of this organisation' });
const INVITATIONS = new Keyset({ table: 'organization_invitations', alias: 'i', noun: 'an invitation of this list' });
const MEMBER_COLUMNS = ['m.id', 'm.organization_id', 'm.user_id', 'u.email', 'u.phone', 'm.role', 'm.status', 'm.created_at'];
const INVITATION_COLUMNS = ['i.*', 'o.name as organization_name'];

/** Memberships and invitations of organisations; snake_case stays here. */
export class MembershipRepository {
  constructor(private readonly db: Db) {}

  private members(): Knex.QueryBuilder {
    return this.db('memberships as m').join('users as u', 'u.id', 'm.user_id');
  }

  private invitations(): Knex.QueryBuilder {
    return this.db('organization_invitations as i').join('organizations as o', 'o.id', 'i.organization_id');
  }

  /**
   * Locks every membership of the organisation, in id order: each change of members takes this
   * lock first, so two changes of one organisation (two owners removing each other) run one
   * after the other and the second sees what the first did.
   */
  async lockMemberships(organizationId: string): Promise<MemberRecord[]> {
    await this.db('memberships').where({ organization_id: organizationId }).orderBy('id').forUpdate().select('id');
    return ((await this.members().where('m.organization_id', organizationId).orderBy('m.id').select(MEMBER_COLUMNS)) as MemberRow[]).map(toMember);
  }

  async find(organizationId: string, userId: string): Promise<MemberRecord | undefined> {
    const row = (await this.members().where({ 'm.organization_id': organizationId, 'm.user_id': userId }).first(MEMBER_COLUMNS)) as MemberRow | undefined;
    return row ? toMember(row) : undefined;
  }

  /**
   * Active and suspended members, newest first (an `invited` membership is not a member yet),
   * `limit + 1` of them; the cursor is a member's user id.
   */
  async list(organizationId: string, page: PageRequest): Promise<MemberRecord[]> {
    const query = this.members().where('m.organization_id', organizationId).whereIn('m.status', ['active', 'suspended']).select(MEMBER_COLUMNS);
    let startingAfter: string | undefined;
    if (page.startingAfter !== undefined) {
      const cursor = !isUuid(page.startingAfter) ? undefined : (await query.clone().where('m.user_id', page.startingAfter).first('m.id')) as { id: string } | undefined;
      if (!cursor) throw MEMBERS.foreignCursor();
      startingAfter = cursor.id;
    }
    return ((await MEMBERS.paginate(this.db, query, { organization_id: organizationId }, { limit: page.limit, startingAfter })) as MemberRow[]).map(toMember);
  }

  /** Makes the user an active member with `role` (a membership already there takes it). */
  async upsertActive(organizationId: string, userId: string, role: Role, now: Date): Promise<void> {
    await this.db.raw(
      `INSERT INTO memberships (organization_id, user_id, role, status, created_at, updated_at) VALUES (?, ?, ?, 'active', ?, ?)
       ON CONFLICT (organization_id, user_id) DO UPDATE SET role = EXCLUDED.role, status = 'active', updated_at = EXCLUDED.updated_at,
         created_at = CASE WHEN memberships.status = 'active' THEN memberships.created_at ELSE EXCLUDED.created_at END`,
      [organizationId, userId, role, now, now],
    );
  }

  async setRole(organizationId: string, userId: string, role: Role, now: Date): Promise<void> {
    await this.db('memberships').where({ organization_id: organizationId, user_id: userId }).update({ role, updated_at: now });
  }

  async remove(organizationId: string, userId: string): Promise<void> {
    await this.db('memberships').where({ organization_id: organizationId, user_id: userId }).del();
  }

  /** Whether a user with this e-mail or telephone is an active member. */
  async identifierIsActiveMember(organizationId: string, identifier: string): Promise<boolean> {
    const row = await this.members()
      .where({ 'm.organization_id': organizationId, 'm.status': 'active' })
      .andWhere((q) => q.where('u.email', identifier).orWhere('u.phone', identifier))
      .first('m.id');
    return row !== undefined;
  }

  async insertInvitation(input: { organizationId: string; identifier: string; role: Role; invitedBy: string; now: Date; expiresAt: Date }): Promise<string> {
    const [row] = (await this.db('organization_invitations')
      .insert({
        organization_id: input.organizationId,
        identifier: input.identifier,
        role: input.role,
        invited_by: input.invitedBy,
        created_at: input.now,
        expires_at: input.expiresAt,
      })
      .returning('id')) as Array<{ id: string }>;
    return (row as { id: string }).id;
  }

  /** Revokes the pending invitation of the identifier, if any (a new one replaces it). */
  /** Revokes the pending invitations of `identifier` (a new one replaces them); their ids. */
  async revokePendingFor(organizationId: string, identifier: string, revokedBy: string, now: Date): Promise<string[]> {
    const rows = (await this.db('organization_invitations')
      .where({ organization_id: organizationId, identifier, status: 'pending' })
      .update({ status: 'revoked', responded_at: now, responded_by: revokedBy })
      .returning('id')) as Array<{ id: string }>;
    return rows.map((row) => row.id);
  }

  async findInvitation(invitationId: string, options: { forUpdate?: boolean } = {}): Promise<InvitationRecord | undefined> {
    if (options.forUpdate) await this.db('organization_invitations').where({ id: invitationId }).forUpdate().first('id');
    const row = (await this.invitations().where('i.id', invitationId).first(INVITATION_COLUMNS)) as InvitationRow | undefined;
    return row ? toInvitation(row) : undefined;
  }

  async respond(invitationId: string, status: Exclude<InvitationStatus, 'pending'>, respondedBy: string | null, now: Date): Promise<void> {
    await this.db('organization_invitations').where({ id: invitationId }).update({ status, responded_at: now, responded_by: respondedBy });
  }

  async listInvitations(organizationId: string, page: PageRequest): Promise<InvitationRecord[]> {
    const query = this.invitations().where('i.organization_id', organizationId).select(INVITATION_COLUMNS);
    return ((await INVITATIONS.rows(this.db, query, { organization_id: organizationId }, page)) as InvitationRow[]).map(toInvitation);
  }

  /** The pending invitations addressed to any of `identifiers` (expired ones included), newest first. */
  async listInvitationsFor(identifiers: readonly string[], page: PageRequest): Promise<InvitationRecord[]> {
    const query = this.invitations().whereIn('i.identifier', [...identifiers]).where('i.status', 'pending').select(INVITATION_COLUMNS);
    if (page.startingAfter !== undefined) await INVITATIONS.requireCursorIn(query, page.startingAfter);
    return ((await INVITATIONS.paginate(this.db, query, {}, page)) as InvitationRow[]).map(toInvitation);
  }
}
