const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

export interface MatchedOperation {
  operationId?: string;
  [key: string]: unknown;
}

/** Finds the contract operation of a method and a concrete path (`/api/transfers/123`), or undefined. */
export type OperationMatcher = (method: string, path: string) => MatchedOperation | undefined;

/**
 * Matches requests against the contract's path templates, for code that runs where the
 * validator has not (yet) matched the request: a body the parser refused, a request the rate
 * limiter refused. Literal segments win over templated ones, as in the validator.
 */
export function operationMatcher(document: Record<string, unknown>, basePath = '/api'): OperationMatcher {
  const routes: Array<{ method: string; pattern: RegExp; literal: number; operation: MatchedOperation }> = [];
  const paths = (document.paths ?? {}) as Record<string, Record<string, unknown>>;
  for (const [template, item] of Object.entries(paths)) {
    const source = `${basePath}${template}`
      .split(/(\{[^}/]+\})/)
      .map((part) => (/^\{[^}/]+\}$/.test(part) ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('');
    for (const [method, operation] of Object.entries(item ?? {})) {
      if (!HTTP_METHODS.has(method)) continue;
      routes.push({ method: method.toUpperCase(), pattern: new RegExp(`^${source}$`), literal: template.replace(/\{[^}/]+\}/g, '').length, operation: operation as MatchedOperation });
    }
  }
  routes.sort((a, b) => b.literal - a.literal);
  return (method, path) => routes.find((route) => route.method === method && route.pattern.test(path))?.operation;
}
