import express, { type Express } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import type { Config } from '../config';
import { NOT_IMPLEMENTED, WRITE_PATH_OPERATIONS, type ContractHandlers } from '../handlers';
import { redactApiKeys } from '../modules/api-keys';
import { DOCUMENT_MAX_BYTES } from '../modules/documents';
import type { Services } from '../services';
import { authenticate, bearerAuthSecurityHandler } from './authenticate';
import { DOCS_PATH_WITH_SLASH, docsRoutes } from './docs-routes';
import { fixedHeaders } from './fixed-headers';
import { healthRoute } from './health-route';
import { errorHandler, notFoundHandler, validationStatusLookup } from './error-handler';
import { BUSINESS_PATH, expressPath, malformedOrganizationIdIsNotFound, mountOperations, TEST_HELPERS_PATH, testHelperGate } from './mount-operations';
import { refuseInexactNumbers } from './exact-json-numbers';
import { requireUtf8 } from './json-charset';
import { hasTrailingSlash } from './strict-paths';
import type { Metrics } from './metrics';
import { operationMatcher } from './operation-matcher';
import { loadOpenApiDocument } from './openapi-document';
import { apiRateLimiter, codeSenderRateLimiter, healthRateLimiter, loginRateLimiter, type RateLimitBackend } from './rate-limit';
import { requestIdFor } from './request-context';
import { installRouteRegexpCache } from './route-regexp-cache';
import { installValidatorSchemaPruning } from './validator-schema-pruning';
import type { ReadRouting } from '../db/read-routing';

export interface AppDeps {
  config: Config;
  logger: Logger;
  /** The services, built once by the caller (buildServices, src/services.ts): the app routes to them and never builds one. */
  services: Pick<Services, 'accessCheck' | 'apiKeys' | 'organizationAccess' | 'idempotency'>;
  /** One handler per contract operation (buildHandlers, src/handlers.ts, over the same services). */
  handlers: ContractHandlers;
  /** Where the rate-limit counters live; the payment page (PAY_PORT) counts there too. */
  rateLimitBackend: RateLimitBackend;
  /** Prometheus metrics; none are kept when absent. */
  metrics?: Metrics;
  /** Where list and statement reads go (DATABASE_READ_URL); absent: every read on the primary. */
  reads?: ReadRouting;
}

/** The API: an Express application, its services and handlers given (AppDeps). */
export type App = Express;

/** What a request log line says of its request (pino-http hands the serializer its own summary). */
function requestLogFields(req: { id?: unknown; method?: string; url?: string; remoteAddress?: string; headers?: Record<string, unknown> }) {
  // A client that puts an API key in a URL must not have it written down: key-shaped text is cut.
  return { id: req.id, method: req.method, url: req.url && redactApiKeys(req.url), remoteAddress: req.remoteAddress, userAgent: req.headers?.['user-agent'] };
}

/**
 * What a response that does not match the contract does. Responses are checked as they are
 * sent, after the handler's transaction has committed: answering 500 then would tell the
 * client a change failed that in fact happened (and every later read of the same data would
 * fail too). So outside tests the drift is logged as an error (`contractDrift`) and the
 * response goes out as the handler made it; under NODE_ENV=test it throws, the response
 * becomes a 500, and the test suite, not a user, meets the drift.
 */
function responseDrift(failHard: boolean, logger: Logger) {
  return (error: Error, _body: unknown, req: { method: string; originalUrl: string; id?: unknown }) => {
    if (failHard) throw error;
    logger.error({ err: error, contractDrift: true, method: req.method, url: req.originalUrl, requestId: req.id }, 'response does not match the contract; sent as is');
  };
}

/**
 * One middleware for what every request gets first (one router step, not one per concern,
 * on every request, health's included): its request id; strict paths (`/api/transfers/`
 * is not `/api/transfers`: an unknown path answers 404); and no cache, shared or private, may
 * keep what answers a bearer token (the caller's own data, or an error about it).
 */
function firstSteps(): express.RequestHandler {
  const notFound = notFoundHandler();
  return (req, res, next) => {
    const id = requestIdFor(req);
    (req as { id?: string }).id = id;
    res.setHeader('X-Request-Id', id);
    if (req.path === DOCS_PATH_WITH_SLASH) return res.redirect(301, '/api/docs');
    if (hasTrailingSlash(req)) return notFound(req, res, next);
    if (req.headers.authorization) res.setHeader('Cache-Control', 'no-store');
    next();
  };
}

/** One log line per request. */
function requestLog(logger: Logger) {
  return pinoHttp({
    logger,
    genReqId: (req) => (req as { id?: string }).id ?? requestIdFor(req),
    // A request line names the request, not its headers: credentials (Authorization, cookies,
    // Idempotency-Key) never reach it, and the line stays short and cheap to build (serialising
    // and redacting every header was a tenth of the CPU of a transfer). The status is what
    // matters of a response; its security headers would be the same kilobyte on every line.
    serializers: { req: requestLogFields, res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }) },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
  });
}

/** JSON bodies: UTF-8 only, numbers exact, at most BODY_LIMIT. */
function jsonBody(config: Config) {
  return express.json({
    limit: config.bodyLimitBytes,
    strict: true,
    verify: (req, res, raw, encoding) => {
      requireUtf8(encoding);
      // The bytes as received: a signed callback's signature covers them, not a re-serialisation.
      (req as { rawBody?: Buffer }).rawBody = raw;
      refuseInexactNumbers(req, res, raw, encoding);
    },
  });
}

/** The bounds of a multipart request: one file of at most DOCUMENT_MAX_BYTES, a few short text fields. */
const UPLOAD_LIMITS = { fileSize: DOCUMENT_MAX_BYTES, files: 1, fields: 8, fieldSize: 1024, parts: 9, headerPairs: 50 };

/** Requests (and, where configured, responses) checked against the contract. */
function contractValidator(document: ReturnType<typeof loadOpenApiDocument>, config: Config, logger: Logger) {
  return OpenApiValidator.middleware({
    apiSpec: document.parse() as never,
    // Bodies are never coerced ({"amount": true} must not become 1); the library still
    // coerces path and query parameters, which arrive as strings.
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false },
    validateResponses: config.validateResponses ? { onError: responseDrift(config.nodeEnv === 'test', logger) } : false,
    validateSecurity: { handlers: { bearerAuth: bearerAuthSecurityHandler, apiKeyAuth: bearerAuthSecurityHandler } },
    validateFormats: true,
    // 'full' checks that dates exist (2026-02-30 is refused), not only their shape.
    ajvFormats: { mode: 'full' },
    ignoreUndocumented: false,
    // multipart/form-data (document uploads): multer in memory, only on operations whose
    // contract takes a `format: binary` field, within bounds of its own (the JSON body limit
    // does not apply to it): one file of at most 5 MB (5,000,000 bytes; beyond: 413), a few short fields.
    fileUploader: { limits: UPLOAD_LIMITS },
  });
}

/** Routes the API to the services and handlers it is given; never listens (tests drive it through supertest). */
export function createApp(deps: AppDeps): App {
  const { config, logger, services, handlers } = deps;
  const document = loadOpenApiDocument();
  installRouteRegexpCache();
  installValidatorSchemaPruning();
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('etag', false);

  const streamLimits = { stallTimeoutMs: config.statements.streamStallTimeoutMs, maxDurationMs: config.statements.streamMaxDurationMs };
  const securityHeaders = fixedHeaders(helmet());
  const rateLimiter = apiRateLimiter(deps.rateLimitBackend, config.rateLimit);
  if (deps.metrics) app.use(deps.metrics.requestMetrics(operationMatcher(document.parse())));
  app.use(firstSteps());
  // Ahead of the pipeline, with a per-IP budget of its own: see the getHealth description in the contract.
  app.get('/api/health', securityHeaders, healthRateLimiter(config.rateLimit), healthRoute(handlers.getHealth));
  app.use(requestLog(logger));
  app.use(securityHeaders);
  app.use('/api', docsRoutes(document));
  // Authentication and the limiter read headers only, so they run before the body is read:
  // a caller over its budget (anonymous callers by IP) costs no body parsing, and a path
  // outside /api never has its body read at all.
  app.use('/api', authenticate(services.accessCheck, config.jwt, services.apiKeys));
  app.use('/api', rateLimiter);
  // Test helpers exist outside production only, and never for a live API key: refused here,
  // before the body or the contract is read, so production answers 404 as for any unknown path.
  const testHelpers = config.nodeEnv !== 'production';
  app.use(`/api${TEST_HELPERS_PATH}`, testHelperGate(testHelpers));
  app.use('/api', jsonBody(config));
  // Before the validator, which would answer 400 for a non-UUID orgId: the spec wants 404.
  app.use(`/api${expressPath(BUSINESS_PATH)}`, malformedOrganizationIdIsNotFound());
  app.use(contractValidator(document, config, logger));

  app.use(
    '/api',
    mountOperations({
      handlers,
      writePath: WRITE_PATH_OPERATIONS,
      notImplemented: NOT_IMPLEMENTED,
      organizationAccess: services.organizationAccess,
      idempotency: services.idempotency,
      apiKeyGuard: (keyId) => services.apiKeys.guard(keyId),
      before: {
        login: [loginRateLimiter(deps.rateLimitBackend, config.rateLimit)],
        signUp: [codeSenderRateLimiter(deps.rateLimitBackend, config.rateLimit, 'signup')],
        requestPasswordReset: [codeSenderRateLimiter(deps.rateLimitBackend, config.rateLimit, 'password-reset')],
      },
      except: ['getHealth'],
      testHelpers,
      streamLimits,
      parseRenderedJson: config.validateResponses,
      reads: deps.reads,
    }),
  );

  app.use(notFoundHandler());
  app.use(errorHandler(logger, validationStatusLookup(document.parse())));
  return app;
}
