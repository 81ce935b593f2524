/**
 * express-openapi-validator matches a request against the contract by compiling every
 * contract path with path-to-regexp on every request (`lookupRoute` in its metadata
 * middleware): with ~30 paths that compilation was the largest single cost of a cheap
 * request in profiles. path-to-regexp is a pure function of its arguments, so its compiled
 * results are memoised here, once per (path, options). The validator reads the function off
 * the module at call time, so replacing the export is enough; nothing else changes.
 */
type PathToRegexp = (path: unknown, options?: Record<string, unknown>) => unknown;

let installed = false;

export function installRouteRegexpCache(): void {
  if (installed) return;
  const validatorEntry = require.resolve('express-openapi-validator/dist/middlewares/openapi.metadata.js');
  const pathToRegexpModule = require(require.resolve('path-to-regexp', { paths: [validatorEntry] })) as { pathToRegexp: PathToRegexp };
  const original = pathToRegexpModule.pathToRegexp;
  const cache = new Map<string, unknown>();
  pathToRegexpModule.pathToRegexp = (path, options) => {
    // Only the validator's call shape (a string path, options limited to sensitive/strict) is memoised.
    if (typeof path !== 'string' || Object.keys(options ?? {}).some((name) => name !== 'sensitive' && name !== 'strict')) {
      return original(path, options);
    }
    const key = `${options?.sensitive ? 1 : 0}${options?.strict ? 1 : 0}${path}`;
    let compiled = cache.get(key);
    if (compiled === undefined) {
      compiled = original(path, options);
      cache.set(key, compiled);
    }
    return compiled;
  };
  installed = true;
}
