import { toListPage, type Handlers } from '../../contract';
import type { OutboxService } from './outbox-service';

/** GET /test-helpers/outbox (mounted only outside production: see src/http/mount-operations.ts). */
export function notificationsHandlers(outbox: OutboxService): Handlers<'listTestHelperOutbox'> {
  return {
    async listTestHelperOutbox({ query }) {
      const page = { limit: query.limit ?? 20, startingAfter: query.starting_after };
      return { data: toListPage(await outbox.list(query.to, page), page.limit) };
    },
  };
}
