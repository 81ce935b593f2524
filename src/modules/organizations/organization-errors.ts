import { ForbiddenError, LockedError, NotFoundError, UnprocessableError } from '../../errors';
import type { ModuleName } from '../../contract';

export const ORGANIZATION_NOT_FOUND_MESSAGE = 'Organization not found.';

/** Unknown organisation, not a UUID, or the caller is not an active member: one answer. */
export class OrganizationNotFoundError extends NotFoundError {
  constructor() {
    super(ORGANIZATION_NOT_FOUND_MESSAGE);
  }
}

export class InsufficientRoleError extends ForbiddenError {
  constructor() {
    super('InsufficientRole', 'Your role in this organisation does not allow this operation.');
  }
}

const MODULE_LABEL: Record<ModuleName, string> = {
  payment_links: 'payment links',
  invoices: 'invoices',
  accounts: 'accounts',
  network_status: 'network status',
};

export class FeatureUnavailableError extends ForbiddenError {
  constructor(module: ModuleName) {
    super('FeatureUnavailable', `The ${MODULE_LABEL[module]} feature is not available for this organisation.`);
  }
}

export class ModuleLockedError extends LockedError {
  constructor(module: ModuleName) {
    super('ModuleLocked', `The ${MODULE_LABEL[module]} module is locked for changes in this organisation.`);
  }
}

export class OrganizationInactiveError extends UnprocessableError {
  constructor() {
    super('OrganizationInactive', 'The organisation is not active: this change is not allowed.');
  }
}
