import { Router, type Request } from 'express';
import type { operations } from '../../../generated/openapi';
import { sendData, toListPage } from '../../http/envelope';
import type { NetworkStatusChange } from './network-status-repository';
import type { CallerOrganization, NetworkStatusService, NetworkStatusView } from './network-status-service';

type StatusData = operations['getNetworkStatus']['responses']['200']['content']['application/json']['data'];
type UpdateBody = operations['updateNetworkStatus']['requestBody']['content']['application/json'];
type HistoryQuery = NonNullable<operations['getNetworkStatusHistory']['parameters']['query']>;
type HistoryData = operations['getNetworkStatusHistory']['responses']['200']['content']['application/json']['data'];

const ORG = '/business/organizations/:orgId';

/** The organisation set by the access policy (never read from the path: it was authorised). */
function organization(req: Request): CallerOrganization {
  if (!req.organization) throw new Error('the organisation access policy did not run before a network-status route');
  return req.organization;
}

function userId(req: Request): string {
  if (!req.auth) throw new Error('no authenticated caller on a network-status route');
  return req.auth.userId;
}

function present(view: NetworkStatusView): StatusData {
  return {
    is_open: view.isOpen,
    is_visible: view.isVisible,
    version: view.version,
    can_manage: view.canManage,
    updated_at: view.updatedAt ? view.updatedAt.toISOString() : null,
    updated_by: view.updatedBy,
  };
}

function presentChange(change: NetworkStatusChange): HistoryData['data'][number] {
  return {
    id: change.id,
    actor_user_id: change.actorUserId,
    before: { is_open: change.before.isOpen, version: change.before.version },
    after: { is_open: change.after.isOpen, version: change.after.version },
    request_id: change.requestId,
    created_at: change.createdAt.toISOString(),
  };
}

/** GET and PATCH of the opening status, and its audit trail (access rules: ACCESS_POLICY). */
export function networkStatusRoutes(networkStatus: NetworkStatusService): Router {
  const router = Router();

  router.get(`${ORG}/network-status`, async (req, res) => {
    sendData(res, 200, present(await networkStatus.get(organization(req))));
  });

  router.patch(`${ORG}/network-status`, async (req, res) => {
    const body = req.body as UpdateBody;
    const requestId = (req as { id?: unknown }).id;
    const view = await networkStatus.update(
      organization(req),
      userId(req),
      { version: body.version, isOpen: body.is_open },
      typeof requestId === 'string' ? requestId : null,
    );
    sendData(res, 200, present(view));
  });

  router.get(`${ORG}/network-status/history`, async (req, res) => {
    const query = req.query as HistoryQuery;
    const limit = query.limit ?? 50;
    const changes = await networkStatus.history(organization(req).id, limit, query.starting_after);
    const data: HistoryData = toListPage(changes.map(presentChange), limit);
    sendData(res, 200, data);
  });

  return router;
}
