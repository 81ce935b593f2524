import type { Schemas } from '../../contract';
import type { NetworkStatusRecord } from './network-status-repository';

/** The contract's NetworkStatus (also the `data.object` of `network_status.updated`). */
export function presentNetworkStatus(view: NetworkStatusRecord & { canManage: boolean }): Schemas['NetworkStatus'] {
  return {
    is_open: view.isOpen,
    is_visible: view.isVisible,
    version: view.version,
    can_manage: view.canManage,
    updated_at: view.updatedAt ? view.updatedAt.toISOString() : null,
    updated_by: view.updatedBy,
  };
}
