import type { Request } from 'express';

/**
 * Routing is strict: `/api/transfers/` is not `/api/transfers`. Express and the validator
 * would each ignore a trailing slash; an unknown path answers 404 NotFound instead (the app's
 * first middleware asks this), so a path means exactly one thing (and one operation in
 * metrics and logs). True for a path other than `/` that ends with a slash: no operation has one.
 */
export function hasTrailingSlash(req: Request): boolean {
  return req.path.length > 1 && req.path.endsWith('/');
}
