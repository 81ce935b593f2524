import fs from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
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

/** Where the reference page's links to the integrators' guides (each tag's `externalDocs`) are served. */
export const GUIDES_PATH = '/api/docs/guides';

/**
 * The contract's links to the guides name the local development server (`make run`, the
 * contract's last server): an absolute URL, as the OpenAPI schema the validator checks the
 * document with requires. The page served by any instance points them at that instance.
 */
export const CONTRACT_GUIDES_BASE = `http://localhost:8080${GUIDES_PATH}/`;

// Search runs in a Web Worker that Redoc builds from a blob: URL, which the page's
// Content-Security-Policy (script-src 'self') refuses; the page works without it. The code
// samples come first in each operation's request panel (curl, then the TypeScript client), the
// body example after them (payloadSampleIdx). The links to the guides are rewritten to the
// page's own address before Redoc renders them.
const INIT_SCRIPT = `fetch('/api/openapi.json').then(function (response) { return response.json(); }).then(function (spec) {
  var base = ${JSON.stringify(CONTRACT_GUIDES_BASE)};
  var here = function (docs) { if (docs && typeof docs.url === 'string' && docs.url.indexOf(base) === 0) docs.url = location.origin + ${JSON.stringify(GUIDES_PATH + '/')} + docs.url.slice(base.length); };
  here(spec.externalDocs);
  (spec.tags || []).forEach(function (tag) { here(tag.externalDocs); });
  Redoc.init(spec, { disableSearch: true, payloadSampleIdx: 2, expandResponses: '200,201', pathInMiddlePanel: true, jsonSampleExpandLevel: 3 }, document.getElementById('redoc-container'));
});`;

/**
 * Redoc's bundle names one outside address, its logo under the side menu; the page must load
 * nothing from elsewhere (offline, and the page's Content-Security-Policy refuses it), so the
 * served copy points it at an empty image (the bundle hides an image that does not load).
 */
const OUTSIDE_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';

function redocBundle(): string {
  const file = path.join(path.dirname(require.resolve('redoc/package.json')), 'bundles', 'redoc.standalone.js');
  return fs.readFileSync(file, 'utf8').replaceAll(OUTSIDE_LOGO, 'data:,');
}

/**
 * The integrators' guides (docs/integrators/*.md beside the service, found as the contract
 * is: from the sources or the build), by file name. A deployment without them answers 404.
 */
function guidesDirectory(): string | undefined {
  const candidates = [path.resolve(__dirname, '..', '..', 'docs', 'integrators'), path.resolve(__dirname, '..', '..', '..', 'docs', 'integrators'), path.resolve('docs', 'integrators')];
  return candidates.find((dir) => fs.existsSync(dir));
}

/** `/api/docs/` (the app's strict paths answer 404 to any other trailing slash) redirects to the page. */
export const DOCS_PATH_WITH_SLASH = '/api/docs/';

/**
 * The contract as JSON and YAML, the offline reference page at /api/docs (DOCS_PATH_WITH_SLASH
 * redirects there, see app.ts) and the guides it links to, as plain text (GUIDES_PATH/NAME.md).
 */
export function docsRoutes(document: OpenApiDocument): Router {
  const router = Router();
  let bundle: string | undefined;
  const guides = guidesDirectory();
  const guideNames = new Set(guides ? fs.readdirSync(guides).filter((name) => /^[a-z0-9-]+\.md$/.test(name)) : []);
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
  // Only a name listed at start is read: no path of the request reaches the file system.
  router.get(`${GUIDES_PATH.replace(/^\/api/, '')}/:name`, (req, res, next) => {
    const name = req.params.name as string;
    if (!guides || !guideNames.has(name)) return next();
    res.type('text/plain; charset=utf-8').send(fs.readFileSync(path.join(guides, name), 'utf8'));
  });
  router.get('/docs/assets/redoc.standalone.js', (_req, res) => {
    bundle ??= redocBundle();
    res.set('Cache-Control', 'public, max-age=3600').type('application/javascript').send(bundle);
  });
  return router;
}
