import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import type { NotificationChannel, OutgoingMessage } from './notifier';

export interface OutboxMessageRow {
  id: string;
  recipient: string;
  channel: NotificationChannel;
  template: string;
  body: string;
  created_at: Date;
}

const OUTBOX = new Keyset({ table: 'notification_outbox', alias: 'o', orderBy: ['created_at', 'position'], noun: 'a message of this recipient' });

/** The sandbox notifier's outbox: every message it kept, by recipient. */
export const outboxRepository = {
  async insert(trx: Knex.Transaction, message: OutgoingMessage): Promise<void> {
    await trx('notification_outbox').insert({ recipient: message.to, channel: message.channel, template: message.template, body: message.body });
  },

  /** A recipient's messages, newest first. */
  async list(db: Knex, recipient: string, page: PageRequest): Promise<OutboxMessageRow[]> {
    return OUTBOX.rows(db, db('notification_outbox as o').where('o.recipient', recipient).select('o.*'), { recipient }, page) as Promise<OutboxMessageRow[]>;
  },

  /** Deletes messages older than `hours`; returns how many. */
  async purgeOlderThan(db: Knex, hours: number): Promise<number> {
    return Number(await db('notification_outbox').where('created_at', '<', db.raw(`now() - make_interval(hours => ?)`, [hours])).del());
  },
};
