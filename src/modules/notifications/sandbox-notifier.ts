import type { Knex } from 'knex';
import type { Notifier, OutgoingMessage } from './notifier';
import { outboxRepository } from './outbox-repository';

/**
 * The sandbox adapter of the notifier port: nothing leaves the platform; every message is kept
 * in the outbox table, in the caller's transaction (a change that rolls back leaves no
 * message). Tests, the demo and a partner's CI read it through GET /test-helpers/outbox, which
 * exists only outside production. Production uses it only when NOTIFIER=sandbox says so.
 */
export class SandboxNotifier implements Notifier {
  readonly kind = 'sandbox';

  async send(trx: Knex.Transaction, message: OutgoingMessage): Promise<void> {
    await outboxRepository.insert(trx, message);
  }
}
