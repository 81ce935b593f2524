import path from 'node:path';
import express, { Router } from 'express';
import type { OpenApiDocument } from './openapi-document';

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Platform API reference</title>
<link rel="stylesheet" href="/api/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/api/docs/assets/swagger-ui-bundle.js"></script>
<script src="/api/docs/init.js"></script>
</body>
</html>`;

const INIT_SCRIPT = `window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#swagger-ui', deepLinking: true, showExtensions: true });`;

/** The contract and an offline reference page (swagger-ui-dist assets served from here, no CDN). */
export function docsRoutes(document: OpenApiDocument): Router {
  const router = Router();
  const assets = path.dirname(require.resolve('swagger-ui-dist/package.json'));
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
  router.use('/docs/assets', express.static(assets, { index: false, maxAge: '1h' }));
  return router;
}
