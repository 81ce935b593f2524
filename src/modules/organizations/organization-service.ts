import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import { toListPage, type AuthorizedOrganization, type ListPage, type PageRequest, type Role } from '../../contract';
import { setLocal, withTransaction } from '../../db/transaction';
import { isCountryCode } from '../../domain/country-code';
import { ValidationError } from '../../errors';
import { isUuid } from '../../ids';
import { parsePartyIdentifier } from '../auth';
import { EventRepository, type EventSubjectType } from '../events';
import {
  AlreadyMemberError,
  InsufficientRoleError,
  InvitationExpiredError,
  InvitationNotFoundError,
  InvitationNotPendingError,
  LastOwnerError,
  MemberNotFoundError,
  OrganizationNotFoundError,
} from './organization-errors';
import { MembershipRepository, type InvitationRecord, type MemberRecord } from './membership-repository';
import { presentInvitation, presentMember, presentOrganization, type InvitationView, type MemberView, type OrganizationView } from './organization-presenter';
import { OrganizationProfileRepository, type LegalForm, type OrganizationRecord } from './organization-repository';

export const INVITATION_TTL_MS = 7 * 86_400_000;
/** Every Business module, open, for a new organisation. */
const NEW_ORGANIZATION_MODULES = ['payment_links', 'invoices', 'accounts', 'network_status'] as const;
/** Roles that manage members and see their identifiers in full. */
const MANAGERS: readonly Role[] = ['owner', 'admin'];

/** A message to one person (the notifier's shape): an invitation by e-mail or SMS. */
export interface OrganizationMessage {
  to: string;
  channel: 'sms' | 'email';
  template: string;
  body: string;
}

export interface OrganizationServiceDeps {
  knex: Knex;
  clock?: Clock;
  /** Opens the organisation's first account in its default currency, in the caller's transaction (the accounts module). */
  openAccount: (trx: Knex.Transaction, organizationId: string, currency: string) => Promise<void>;
  /** Hands a message to the notifier in the caller's transaction (it is sent after the commit). */
  notify: (trx: Knex.Transaction, message: OrganizationMessage) => Promise<void>;
}

export interface NewOrganization {
  legalName: string;
  tradingName?: string;
  country: string;
  registrationNumber: string;
  legalForm: LegalForm;
  defaultCurrency: string;
}

export interface ProfileChange {
  tradingName?: string;
  supportEmail?: string | null;
  supportPhone?: string | null;
}

/**
 * Organisations run by their members: opening one, its profile, its members and invitations.
 * Every change of members locks the organisation's memberships first (in id order), then reads
 * the actor's and the target's standing under that lock, so concurrent changes (two owners
 * removing each other) apply one after the other and the last owner is always kept. Each
 * change records its event with its actor; a member who loses the right to create API keys
 * loses the keys they hold in the same transaction (the database trigger of the memberships,
 * which names the actor this service sets as `app.actor_user_id`).
 */
export class OrganizationService {
  private readonly clock: Clock;

  constructor(private readonly deps: OrganizationServiceDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  private get knex(): Knex {
    return this.deps.knex;
  }

  async create(trx: Knex.Transaction, actorUserId: string, input: NewOrganization): Promise<OrganizationView> {
    const now = this.clock();
    if (!isCountryCode(input.country)) throw ValidationError.field('body.country', `country ${input.country} is not an ISO 3166-1 alpha-2 country code.`);
    const currency = await trx('currencies').where({ code: input.defaultCurrency }).first('code');
    if (!currency) throw ValidationError.field('body.default_currency', `default_currency ${input.defaultCurrency} is not a currency of the platform.`);
    const profiles = new OrganizationProfileRepository(trx);
    const id = await profiles.insert({
      legalName: input.legalName.trim(),
      tradingName: input.tradingName?.trim() ?? null,
      country: input.country,
      registrationNumber: input.registrationNumber.trim(),
      legalForm: input.legalForm,
      defaultCurrency: input.defaultCurrency,
      createdBy: actorUserId,
      now,
    });
    await profiles.enableModules(id, NEW_ORGANIZATION_MODULES);
    await new MembershipRepository(trx).upsertActive(id, actorUserId, 'owner', now);
    await this.deps.openAccount(trx, id, input.defaultCurrency);
    const view = presentOrganization(await this.mustFind(trx, id));
    await this.record(trx, { type: 'organization.created', subjectType: 'organization', subjectId: id, organizationId: id, actorUserId, object: view, previousStatus: null, now });
    return view;
  }

  async get(organizationId: string): Promise<OrganizationView> {
    return presentOrganization(await this.mustFind(this.knex, organizationId));
  }

  async update(organizationId: string, actorUserId: string, change: ProfileChange): Promise<OrganizationView> {
    return withTransaction(this.knex, async (trx) => {
      const now = this.clock();
      const profiles = new OrganizationProfileRepository(trx);
      const before = await this.mustFind(trx, organizationId, true);
      await profiles.updateProfile(organizationId, { ...change, tradingName: change.tradingName?.trim() }, now);
      const view = presentOrganization(await this.mustFind(trx, organizationId));
      await this.record(trx, { type: 'organization.updated', subjectType: 'organization', subjectId: organizationId, organizationId, actorUserId, object: view, previousStatus: before.status, now });
      return view;
    });
  }

  /** Members, newest first; identifiers in full for owners and admins, masked for other members and API keys. */
  async listMembers(organization: Pick<AuthorizedOrganization, 'id' | 'role'>, page: PageRequest): Promise<ListPage<MemberView>> {
    const rows = await new MembershipRepository(this.knex).list(organization.id, page);
    const reveal = organization.role !== null && MANAGERS.includes(organization.role);
    const items = rows.slice(0, page.limit).map((row) => presentMember(row, reveal));
    const hasMore = rows.length > page.limit;
    return { object: 'list', data: items, has_more: hasMore, next_cursor: hasMore ? (items.at(-1)?.user_id ?? null) : null };
  }

  /**
   * Changes a member's role. Only an owner grants or takes away `owner`; an admin cannot
   * change another admin (403 InsufficientRole); the last active owner stays one (409 LastOwner).
   * `me` is the caller: an owner or admin may step down to another role (never up to owner
   * unless an owner). The event carries the role before the change (`previous_role`).
   */
  async changeRole(organizationId: string, actorUserId: string, target: string, role: Role): Promise<MemberView> {
    const targetUserId = target === 'me' ? actorUserId : target;
    return withTransaction(this.knex, async (trx) => {
      const now = this.clock();
      const { actor, target, members } = await this.lockFor(trx, organizationId, actorUserId, targetUserId);
      if (target.userId !== actor.userId || role === 'owner') assertMayManage(actor.role, target.role, role);
      if (target.role === role) return presentMember(target, true);
      if (target.role === 'owner' && target.status === 'active' && activeOwners(members) <= 1) throw new LastOwnerError();
      await setLocal(trx, { 'app.actor_user_id': actorUserId });
      await new MembershipRepository(trx).setRole(organizationId, target.userId, role, now);
      const changed = { ...target, role };
      await this.recordMember(trx, 'organization.member_role_changed', changed, actorUserId, now, presentMember(changed, false), target.status, { previous_role: target.role });
      return presentMember(changed, true);
    });
  }

  /**
   * Removes a member, or the caller leaves (`me`, or their own id). Owners and admins remove
   * others within the same limits as role changes; the last active owner can neither leave nor
   * be removed. From the commit on the removed member's requests on the organisation answer 404.
   */
  async removeMember(organizationId: string, actorUserId: string, target: string): Promise<MemberView> {
    const targetUserId = target === 'me' ? actorUserId : target;
    return withTransaction(this.knex, async (trx) => {
      const now = this.clock();
      const { actor, target: member, members } = await this.lockFor(trx, organizationId, actorUserId, targetUserId);
      if (member.userId !== actor.userId) assertMayManage(actor.role, member.role);
      if (member.role === 'owner' && member.status === 'active' && activeOwners(members) <= 1) throw new LastOwnerError();
      await setLocal(trx, { 'app.actor_user_id': actorUserId });
      await new MembershipRepository(trx).remove(organizationId, member.userId);
      const removed = presentMember(member, false, 'removed');
      await this.recordMember(trx, 'organization.member_removed', member, actorUserId, now, removed, member.status);
      return { ...removed, identifier: member.identifier };
    });
  }

  /**
   * Invites an identifier to a role for 7 days and sends the invitation (e-mail or SMS). An
   * identifier nobody has signed up with is kept for when they do; a new invitation of the same
   * identifier replaces its pending one. Only an owner invites an owner.
   */
  async invite(trx: Knex.Transaction, organization: Pick<AuthorizedOrganization, 'id' | 'role'>, actorUserId: string, input: { identifier: string; role: Role }): Promise<InvitationView> {
    const now = this.clock();
    if (input.role === 'owner' && organization.role !== 'owner') throw new InsufficientRoleError();
    const party = parsePartyIdentifier(input.identifier, { path: 'body.identifier', name: 'identifier' });
    const identifier = party.kind === 'email' ? party.email : party.phone;
    const memberships = new MembershipRepository(trx);
    await memberships.lockMemberships(organization.id);
    if (await memberships.identifierIsActiveMember(organization.id, identifier)) throw new AlreadyMemberError();
    for (const replaced of await memberships.revokePendingFor(organization.id, identifier, actorUserId, now)) await this.recordInvitation(trx, 'organization.invitation_revoked', replaced, actorUserId, now);
    const id = await memberships.insertInvitation({ organizationId: organization.id, identifier, role: input.role, invitedBy: actorUserId, now, expiresAt: new Date(now.getTime() + INVITATION_TTL_MS) });
    const invitation = await this.mustFindInvitation(trx, id);
    await this.recordInvitation(trx, 'organization.member_invited', id, actorUserId, now);
    await this.deps.notify(trx, {
      to: identifier,
      channel: party.kind === 'email' ? 'email' : 'sms',
      template: 'organization_invitation',
      body: `You are invited to join ${invitation.organizationName} as ${input.role.replace('_', ' ')}. Sign in to accept; the invitation expires on ${invitation.expiresAt.toISOString().slice(0, 10)}.`,
    });
    return presentInvitation(invitation, now);
  }

  async listInvitations(organizationId: string, page: PageRequest): Promise<ListPage<InvitationView>> {
    const now = this.clock();
    const rows = await new MembershipRepository(this.knex).listInvitations(organizationId, page);
    return toListPage(rows.map((row) => presentInvitation(row, now)), page.limit);
  }

  /** Revokes a pending invitation (the event `organization.invitation_revoked`); one no longer pending is answered as it is. */
  async revokeInvitation(organizationId: string, invitationId: string, actorUserId: string): Promise<InvitationView> {
    return withTransaction(this.knex, async (trx) => {
      const now = this.clock();
      const memberships = new MembershipRepository(trx);
      const invitation = await memberships.findInvitation(invitationId, { forUpdate: true });
      if (!invitation || invitation.organizationId !== organizationId) throw new InvitationNotFoundError();
      if (invitation.status !== 'pending') return presentInvitation(invitation, now);
      await memberships.respond(invitationId, 'revoked', actorUserId, now);
      return presentInvitation(await this.recordInvitation(trx, 'organization.invitation_revoked', invitationId, actorUserId, now), now);
    });
  }

  /** The pending invitations addressed to the user's e-mail address or telephone number. */
  async myInvitations(userId: string, page: PageRequest): Promise<ListPage<InvitationView>> {
    const now = this.clock();
    const identifiers = await this.identifiersOf(this.knex, userId);
    const rows = await new MembershipRepository(this.knex).listInvitationsFor(identifiers, page);
    return toListPage(rows.map((row) => presentInvitation(row, now)), page.limit);
  }

  /**
   * Accepts an invitation addressed to the user: they become an active member with its role
   * (a member already active keeps their membership). Accepting it again answers it again;
   * an expired one is 409 InvitationExpired; someone else's, or a revoked one, 404.
   */
  async accept(trx: Knex.Transaction, userId: string, invitationId: string): Promise<InvitationView> {
    const now = this.clock();
    const memberships = new MembershipRepository(trx);
    const invitation = await this.addressedInvitation(trx, userId, invitationId);
    if (invitation.status === 'accepted' && invitation.respondedBy === userId) return presentInvitation(invitation, now);
    if (invitation.status !== 'pending') throw new InvitationNotPendingError(invitation.status);
    if (invitation.expiresAt.getTime() <= now.getTime()) throw new InvitationExpiredError();
    const members = await memberships.lockMemberships(invitation.organizationId);
    const existing = members.find((member) => member.userId === userId && member.status === 'active');
    if (!existing) await memberships.upsertActive(invitation.organizationId, userId, invitation.role, now);
    await memberships.respond(invitationId, 'accepted', userId, now);
    if (!existing) {
      const member = await memberships.find(invitation.organizationId, userId);
      if (!member) throw new Error(`membership of ${userId} vanished after its insert`);
      await this.recordMember(trx, 'organization.member_joined', member, userId, now, presentMember(member, false), null);
    }
    return presentInvitation(await this.mustFindInvitation(trx, invitationId), now);
  }

  /** Declines an invitation addressed to the user (the event `organization.invitation_declined`, its actor the user); declining it again answers it again. */
  async decline(trx: Knex.Transaction, userId: string, invitationId: string): Promise<InvitationView> {
    const now = this.clock();
    const invitation = await this.addressedInvitation(trx, userId, invitationId);
    if (invitation.status === 'declined' && invitation.respondedBy === userId) return presentInvitation(invitation, now);
    if (invitation.status !== 'pending') throw new InvitationNotPendingError(invitation.status);
    await new MembershipRepository(trx).respond(invitationId, 'declined', userId, now);
    return presentInvitation(await this.recordInvitation(trx, 'organization.invitation_declined', invitationId, userId, now), now);
  }

  /** The invitation, locked, when it is addressed to one of the user's identifiers and not revoked; otherwise 404. */
  private async addressedInvitation(trx: Knex.Transaction, userId: string, invitationId: string): Promise<InvitationRecord> {
    const invitation = await new MembershipRepository(trx).findInvitation(invitationId, { forUpdate: true });
    const identifiers = await this.identifiersOf(trx, userId);
    if (!invitation || invitation.status === 'revoked' || !identifiers.includes(invitation.identifier)) throw new InvitationNotFoundError();
    return invitation;
  }

  private async identifiersOf(db: Knex | Knex.Transaction, userId: string): Promise<string[]> {
    const user = (await db('users').where({ id: userId }).first('email', 'phone')) as { email: string | null; phone: string | null } | undefined;
    return [user?.email, user?.phone].filter((value): value is string => typeof value === 'string');
  }

  /**
   * Locks the organisation's memberships and reads the actor's and the target's under the
   * lock, so the actor is judged on what holds now: an actor no longer an active member is
   * 404 (as on their next request), a target that is not a member 404 MemberNotFound.
   */
  private async lockFor(trx: Knex.Transaction, organizationId: string, actorUserId: string, targetUserId: string): Promise<{ actor: MemberRecord; target: MemberRecord; members: MemberRecord[] }> {
    const members = await new MembershipRepository(trx).lockMemberships(organizationId);
    const actor = members.find((member) => member.userId === actorUserId && member.status === 'active');
    if (!actor) throw new OrganizationNotFoundError();
    const target = isUuid(targetUserId) ? members.find((member) => member.userId === targetUserId.toLowerCase() && member.status !== 'invited') : undefined;
    if (!target) throw new MemberNotFoundError();
    return { actor, target, members };
  }

  private async recordMember(trx: Knex.Transaction, type: string, member: MemberRecord, actorUserId: string, now: Date, object: MemberView, previousStatus: string | null, extraData?: Record<string, unknown>): Promise<void> {
    await this.record(trx, { type, subjectType: 'organization_member', subjectId: member.id, organizationId: member.organizationId, actorUserId, object, previousStatus, now, extraData });
  }

  /** Records an invitation's event with the invitation as it now is (identifier masked); returns the invitation. */
  private async recordInvitation(trx: Knex.Transaction, type: string, invitationId: string, actorUserId: string, now: Date): Promise<InvitationRecord> {
    const invitation = await this.mustFindInvitation(trx, invitationId);
    const object = presentInvitation(invitation, now, false);
    await this.record(trx, { type, subjectType: 'organization_invitation', subjectId: invitation.id, organizationId: invitation.organizationId, actorUserId, object, previousStatus: undefined, now });
    return invitation;
  }

  private async record(
    trx: Knex.Transaction,
    event: { type: string; subjectType: EventSubjectType; subjectId: string; organizationId: string; actorUserId: string | null; object: unknown; previousStatus: string | null | undefined; now: Date; extraData?: Record<string, unknown> },
  ): Promise<void> {
    await new EventRepository(trx).record({
      type: event.type,
      subjectType: event.subjectType,
      subjectId: event.subjectId,
      organizationId: event.organizationId,
      actorUserId: event.actorUserId,
      object: event.object,
      previousStatus: event.previousStatus,
      occurredAt: event.now,
      extraData: event.extraData,
    });
  }

  private async mustFind(db: Knex | Knex.Transaction, organizationId: string, forUpdate = false): Promise<OrganizationRecord> {
    const record = await new OrganizationProfileRepository(db).find(organizationId, { forUpdate });
    if (!record) throw new OrganizationNotFoundError();
    return record;
  }

  private async mustFindInvitation(db: Knex | Knex.Transaction, invitationId: string): Promise<InvitationRecord> {
    const invitation = await new MembershipRepository(db).findInvitation(invitationId);
    if (!invitation) throw new InvitationNotFoundError();
    return invitation;
  }
}

function activeOwners(members: readonly MemberRecord[]): number {
  return members.filter((member) => member.role === 'owner' && member.status === 'active').length;
}

/**
 * Whether `actor` may change a member whose role is `target` (to `next`, for a role change):
 * owners and admins manage members; only an owner touches `owner`; an admin never changes
 * another admin. Pure: the rule of both the role change and the removal.
 */
export function assertMayManage(actor: Role, target: Role, next?: Role): void {
  if (!MANAGERS.includes(actor)) throw new InsufficientRoleError();
  if ((target === 'owner' || next === 'owner') && actor !== 'owner') throw new InsufficientRoleError();
  if (actor === 'admin' && target === 'admin') throw new InsufficientRoleError();
}
