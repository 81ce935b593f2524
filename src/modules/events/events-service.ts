import type { Knex } from 'knex';
import { withTransaction } from '../../db/transaction';
import { NotFoundError, ValidationError } from '../../errors';
import { EVENT_PAGES, EventRepository, type EventSubjectType, type StoredEvent } from './event-repository';
import { eventRowId } from './event-presenter';
import { readConnection } from '../../db/read-routing';

export interface EventQuery {
  limit: number;
  startingAfter?: string;
  type?: string;
  objectId?: string;
}

/** Rows deleted per purge statement (a purge runs statements until none is left). */
const PURGE_BATCH = 1_000;

/**
 * The events API: an organisation's events, and a user's (the transfers they sent or
 * received, the escrows they are a party to, the tontines they belong to); retention purge.
 */
export class EventsService {
  constructor(
    private readonly knex: Knex,
    private readonly options: { retentionDays: number; clock: () => Date },
  ) {}

  /** The organisation's events about objects of `objectTypes` (those the caller may read). */
  listForOrganization(organizationId: string, query: EventQuery, objectTypes: readonly EventSubjectType[]): Promise<StoredEvent[]> {
    return this.page((q) => q.where('e.organization_id', organizationId).whereIn('e.subject_type', [...objectTypes]), query);
  }

  listForUser(userId: string, query: EventQuery): Promise<StoredEvent[]> {
    return this.page(userScope(this.knex, userId), query);
  }

  /** One event of the organisation about an object of `objectTypes`; another one is 404, like an unknown id. */
  getForOrganization(organizationId: string, eventId: string, objectTypes: readonly EventSubjectType[]): Promise<StoredEvent> {
    return this.one((q) => q.where('e.organization_id', organizationId).whereIn('e.subject_type', [...objectTypes]), eventId);
  }

  getForUser(userId: string, eventId: string): Promise<StoredEvent> {
    return this.one(userScope(this.knex, userId), eventId);
  }

  /**
   * Deletes the events older than the retention (EVENT_RETENTION_DAYS), a batch per
   * transaction, and their deliveries with them. Returns how many were deleted.
   */
  async purgeExpired(): Promise<number> {
    const before = new Date(this.options.clock().getTime() - this.options.retentionDays * 86_400_000);
    let purged = 0;
    for (;;) {
      const deleted = await withTransaction(this.knex, (trx) => new EventRepository(trx).purgeOlderThan(before, PURGE_BATCH));
      purged += deleted;
      if (deleted < PURGE_BATCH) return purged;
    }
  }

  private async page(scope: (query: Knex.QueryBuilder) => void, query: EventQuery): Promise<StoredEvent[]> {
    const startingAfter = query.startingAfter === undefined ? undefined : eventRowId(query.startingAfter);
    if (query.startingAfter !== undefined && startingAfter === undefined) throw badCursor();
    return new EventRepository(readConnection(this.knex)).page(scope, { limit: query.limit, startingAfter, type: query.type, objectId: query.objectId });
  }

  private async one(scope: (query: Knex.QueryBuilder) => void, eventId: string): Promise<StoredEvent> {
    const id = eventRowId(eventId);
    const found = id ? await new EventRepository(this.knex).page((q) => { scope(q); q.where('e.id', id); }, { limit: 1 }) : undefined;
    const event = found?.[0];
    if (!event) throw new NotFoundError('No event of yours has this id.');
    return event;
  }
}

/** A starting_after that is no event id at all: the same 400 as an event of another list. */
function badCursor(): ValidationError {
  return EVENT_PAGES.foreignCursor();
}

/** The events of the user's transfers, escrows, tontines, verification sessions, tier, crypto deposits, withdrawals and conversions. */
function userScope(knex: Knex, userId: string): (query: Knex.QueryBuilder) => void {
  return (query) =>
    query.where((where) =>
      where
        .where((q) => q.where('e.subject_type', 'transfer').whereIn('e.subject_id', knex('transfers').select('id').where('sender_user_id', userId).orWhere('recipient_user_id', userId)))
        .orWhere((q) => q.where('e.subject_type', 'escrow').whereIn('e.subject_id', knex('escrows').select('id').where('buyer_user_id', userId).orWhere('seller_user_id', userId)))
        .orWhere((q) => q.where('e.subject_type', 'tontine').whereIn('e.subject_id', knex('tontine_members').select('tontine_id').where('user_id', userId)))
        // Identity: the user's verification sessions and the user's own tier changes.
        .orWhere((q) => q.where('e.subject_type', 'verification_session').whereIn('e.subject_id', knex('verification_sessions').select('id').where('user_id', userId)))
        .orWhere((q) => q.where('e.subject_type', 'user').where('e.subject_id', userId))
        .orWhere((q) => q.where('e.subject_type', 'crypto_deposit').whereIn('e.subject_id', knex('crypto_deposits').select('id').where('user_id', userId)))
        .orWhere((q) => q.where('e.subject_type', 'crypto_conversion').whereIn('e.subject_id', knex('crypto_conversions').select('id').where('user_id', userId)))
        .orWhere((q) => q.where('e.subject_type', 'crypto_withdrawal').whereIn('e.subject_id', knex('crypto_withdrawals').select('id').where('user_id', userId))),
    );
}
