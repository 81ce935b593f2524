import { pageRequest, toListPage, type Handlers, type Schemas } from '../../contract';
import type { NetworkStatusChange } from './network-status-repository';
import { presentNetworkStatus as present } from './network-status-presenter';
import type { NetworkStatusService } from './network-status-service';

function presentChange(change: NetworkStatusChange): Schemas['NetworkStatusChange'] {
  return {
    id: change.id,
    actor_user_id: change.actorUserId,
    before: { is_open: change.before.isOpen, version: change.before.version },
    after: { is_open: change.after.isOpen, version: change.after.version },
    request_id: change.requestId,
    created_at: change.createdAt.toISOString(),
  };
}

/** GET and PATCH of the opening status, and its audit trail. */
export function networkStatusHandlers(networkStatus: NetworkStatusService): Handlers<'getNetworkStatus' | 'updateNetworkStatus' | 'getNetworkStatusHistory'> {
  return {
    getNetworkStatus: async ({ organization }) => ({ data: present(await networkStatus.get(organization)) }),
    async updateNetworkStatus({ organization, caller, body, requestId }) {
      const view = await networkStatus.update(organization, caller.userId, { version: body.version, isOpen: body.is_open }, requestId || null);
      return { data: present(view) };
    },
    async getNetworkStatusHistory({ organization, query }) {
      const page = pageRequest(query);
      const changes = await networkStatus.history(organization.id, page.limit, page.startingAfter);
      return { data: toListPage(changes.map(presentChange), page.limit) };
    },
  };
}
