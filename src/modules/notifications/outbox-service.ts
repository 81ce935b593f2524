import type { Knex } from 'knex';
import type { PageRequest } from '../../db/keyset';
import { parsePartyIdentifier } from '../auth';
import { outboxRepository, type OutboxMessageRow } from './outbox-repository';

export interface OutboxMessageView {
  id: string;
  to: string;
  channel: 'sms' | 'email';
  template: string;
  body: string;
  created_at: string;
}

function present(row: OutboxMessageRow): OutboxMessageView {
  return { id: row.id, to: row.recipient, channel: row.channel, template: row.template, body: row.body, created_at: new Date(row.created_at).toISOString() };
}

/** `+2250700009999` sent unencoded in a query string reaches the server as ` 2250700009999`. */
export function restorePlus(text: string): string {
  return /^\s+[0-9]/.test(text) ? `+${text.trimStart()}` : text;
}

/** What the sandbox notifier kept: read by the test helper, purged after OUTBOX_RETENTION_HOURS. */
export class OutboxService {
  constructor(
    private readonly knex: Knex,
    private readonly retentionHours: number,
  ) {}

  /**
   * A recipient's messages, newest first; `to` is read as any identifier is (case, spaces and
   * `00` forgiven). A query string decodes an unencoded `+` as a space (`?to=+225...` arrives as
   * ` 225...`): whitespace in front of digits is read as the `+` it was.
   */
  async list(to: string, page: PageRequest): Promise<OutboxMessageView[]> {
    const identifier = parsePartyIdentifier(restorePlus(to), { path: 'query.to', name: 'to' });
    const recipient = identifier.kind === 'email' ? identifier.email : identifier.phone;
    return (await outboxRepository.list(this.knex, recipient, page)).map(present);
  }

  purgeExpired(): Promise<number> {
    return outboxRepository.purgeOlderThan(this.knex, this.retentionHours);
  }
}
