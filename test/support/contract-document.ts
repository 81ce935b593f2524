import { loadOpenApiDocument } from '../../src/http/openapi-document';

/** The bundled contract as plain JSON, and `$ref` resolution within it (contract tests). */
export type Json = Record<string, unknown>;
export const contractDocument = loadOpenApiDocument().parse() as Json;

/** Follows `$ref`s (JSON pointers into the bundled document) until a node that is not one. */
export function resolveRef(node: unknown): Json {
  let at = node as Json;
  while (typeof at?.$ref === 'string') {
    at = (at.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((o, key) => (o as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], contractDocument) as Json;
  }
  return at;
}
