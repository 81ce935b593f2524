import type { Knex } from 'knex';

/** How a message reaches its recipient: `sms` to a telephone number, `email` to an e-mail address. */
export type NotificationChannel = 'sms' | 'email';

/** One SMS or e-mail: its recipient (E.164 or lower-cased e-mail), channel, template name and text. */
export interface OutgoingMessage {
  to: string;
  channel: NotificationChannel;
  template: string;
  body: string;
}

/**
 * The port every SMS and e-mail goes through. `send` runs in the caller's transaction: a
 * message exists only if the change that sends it commits (a sign-up that rolls back sends no
 * code). An adapter that talks to a provider records the message there and delivers it after
 * the commit (a job), never by an HTTP call inside the transaction.
 */
export interface Notifier {
  send(trx: Knex.Transaction, message: OutgoingMessage): Promise<void>;
}
