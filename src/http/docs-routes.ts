import path from 'node:path';
import express, { Router } from 'express';
import type { OpenApiDocument } from './openapi-document';

/**
 * The reference page: Redoc's standalone bundle (from the `redoc` package, served from here: no
 * CDN, works offline) renders the bundled contract, with each operation's `x-codeSamples`
 * (curl and the TypeScript client, written by `make generate`) beside it.
 */
const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Platform API reference</title>
</head>
<body>
<div id="redoc-container"></div>
<script src="/api/docs/assets/redoc.standalone.js"></script>
<script src="/api/docs/init.js"></script>
</body>
</html>`;

// Search runs in a Web Worker that Redoc builds from a blob: URL, which the page's
// Content-Security-Policy (script-src 'self') refuses; the page works without it.
const INIT_SCRIPT = `Redoc.init('/api/openapi.json', { disableSearch: true, expandResponses: '200,201', hideDownloadButton: false, pathInMiddlePanel: true, jsonSampleExpandLevel: 3 }, document.getElementById('redoc-container'));`;

const ASSETS = ['redoc.standalone.js'];

/** `/api/docs/` (the app's strict paths answer 404 to any other trailing slash) redirects to the page. */
export const DOCS_PATH_WITH_SLASH = '/api/docs/';

/** The contract as JSON and YAML, and the offline reference page at /api/docs (DOCS_PATH_WITH_SLASH redirects there, see app.ts). */
export function docsRoutes(document: OpenApiDocument): Router {
  const router = Router();
  const bundles = path.join(path.dirname(require.resolve('redoc/package.json')), 'bundles');
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(document.json);
  });
  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(document.yaml);
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(DOCS_PAGE);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT_SCRIPT);
  });
  for (const asset of ASSETS) {
    router.get(`/docs/assets/${asset}`, (_req, res) => {
      res.sendFile(path.join(bundles, asset), { maxAge: '1h' });
    });
  }
  return router;
}
