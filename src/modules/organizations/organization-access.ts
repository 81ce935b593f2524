import type { RequestHandler } from 'express';
import { UnauthorizedError } from '../../errors';
import { contractOperation } from '../../http/request-context';
import { accessRuleFor } from './access-policy';
import type { OrganizationAccessService } from './organization-access-service';
import { isUuid } from '../../ids';
import { OrganizationNotFoundError } from './organization-errors';

/** The Business prefix every operation of ACCESS_POLICY lives under (relative to /api). */
export const BUSINESS_ORGANIZATION_PREFIX = '/business/organizations/:orgId';

/**
 * Mounted once on BUSINESS_ORGANIZATION_PREFIX, after the validator and before every Business
 * router and the 501 fallback: applies the ACCESS_POLICY rule of the matched contract
 * operation and sets `req.organization`. An operation without a rule fails closed (500).
 */
export function organizationAccess(service: OrganizationAccessService): RequestHandler {
  return async (req, _res, next) => {
    const operation = contractOperation(req);
    if (!operation) throw new OrganizationNotFoundError();
    if (!req.auth) throw new UnauthorizedError();
    const rule = accessRuleFor(operation.operationId);
    if (!rule) {
      req.log?.error({ operationId: operation.operationId }, 'Business operation has no rule in ACCESS_POLICY (src/modules/organizations/access-policy.ts): refused');
      throw new Error(`operation ${operation.operationId} has no access rule`);
    }
    const fromPath = req.params.orgId;
    const orgId = operation.pathParams.orgId ?? (typeof fromPath === 'string' ? fromPath : '');
    req.organization = await service.authorize(orgId, req.auth.userId, rule);
    next();
  };
}

/**
 * Runs before the validator (which would answer 400 for a path parameter that is not a UUID):
 * an authenticated caller gets the same 404 for a malformed orgId as for a foreign one.
 * Without a valid token it stays out of the way so the validator answers 401 first.
 */
export function malformedOrganizationIdIsNotFound(): RequestHandler {
  return (req, _res, next) => {
    const orgId = req.params.orgId;
    if (req.auth && typeof orgId === 'string' && !isUuid(orgId)) throw new OrganizationNotFoundError();
    next();
  };
}
