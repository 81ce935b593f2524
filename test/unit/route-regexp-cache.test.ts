import { describe, expect, it } from 'vitest';
import { installRouteRegexpCache } from '../../src/http/route-regexp-cache';

describe('route regexp cache', () => {
  it('returns the same compiled route for the same path and options, and still matches correctly', () => {
    installRouteRegexpCache();
    const validatorEntry = require.resolve('express-openapi-validator/dist/middlewares/openapi.metadata.js');
    const mod = require(require.resolve('path-to-regexp', { paths: [validatorEntry] })) as {
      pathToRegexp: (path: string, options?: Record<string, unknown>) => { regexp: RegExp; keys: Array<{ name: string }> };
    };
    const first = mod.pathToRegexp('/api/transfers/:id', { sensitive: false, strict: false });
    const second = mod.pathToRegexp('/api/transfers/:id', { sensitive: false, strict: false });
    expect(second).toBe(first);
    expect(first.regexp.exec('/api/transfers/abc')?.[1]).toBe('abc');
    expect(first.keys.map((k) => k.name)).toEqual(['id']);
    const sensitive = mod.pathToRegexp('/api/transfers/:id', { sensitive: true, strict: false });
    expect(sensitive).not.toBe(first);
    // Other call shapes are not memoised.
    const other = mod.pathToRegexp('/api/x', { end: false });
    expect(mod.pathToRegexp('/api/x', { end: false })).not.toBe(other);
  });
});
