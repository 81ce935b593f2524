import type { RequestHandler } from 'express';
import { notFoundHandler } from './error-handler';

/**
 * Routing is strict: `/api/transfers/` is not `/api/transfers`. Express and the validator
 * would each ignore a trailing slash; an unknown path answers 404 NotFound instead, so a
 * path means exactly one thing (and one operation in metrics and logs).
 */
export function strictPaths(): RequestHandler {
  const notFound = notFoundHandler();
  return (req, res, next) => {
    if (req.path.length > 1 && req.path.endsWith('/')) return notFound(req, res, next);
    next();
  };
}
