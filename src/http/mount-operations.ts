import crypto from 'node:crypto';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { withTransactionGuard, type TransactionGuard } from '../db/transaction';
import { isUuid } from '../ids';
import { APPLIED_IN_WINDOW, OPERATIONS, RenderedJson, type ChunkWriter, type Handler, type IdempotencyClaim, type IdempotentResource, type OperationId, type UploadedFile } from '../contract';
import { NotFoundError, NotImplementedError, UnauthorizedError } from '../errors';
import { API_KEY_PREFIXES, ApiKeyNotAllowedError } from '../modules/api-keys';
import { requestHash, validateIdempotencyKey, type IdempotencyService } from '../modules/idempotency';
import { accessRuleFor, OrganizationNotFoundError, type OrganizationAccessService } from '../modules/organizations';
import { envelopeOf, envelopeText } from './envelope';
import { write } from './stream';
import { clientIp } from './rate-limit';
import { writerKeys, type ReadRouting } from '../db/read-routing';

/** Every Business operation lives under this path; each needs an `x-access` rule. */
export const BUSINESS_PATH = '/business/organizations/{orgId}';

/** Every test helper (`x-test-helper: true` in the contract) lives under this path. */
export const TEST_HELPERS_PATH = '/test-helpers';

/** Handlers for some operations; the mount refuses to start without one for each it mounts. */
export type OperationHandlers = Partial<{ [Id in OperationId]: Handler<Id> }>;

export interface MountOptions {
  handlers: OperationHandlers;
  /**
   * Operations on the one write path (src/modules/writes): their effect claims the
   * Idempotency-Key in its locked read and completes it in the statement that applies its
   * decision, under the pipeline's rules (IdempotencyService: KeyClaimedInRead).
   */
  writePath?: readonly OperationId[];
  /** Contract operations without a handler yet: they answer 501 NotImplemented (after access checks). */
  notImplemented: readonly OperationId[];
  organizationAccess: OrganizationAccessService;
  /** Applies the Idempotency-Key of the operations whose contract declares it. */
  idempotency: Pick<IdempotencyService, 'perform' | 'pendingKey'>;
  /** Extra middleware in front of an operation (the login rate limiter). */
  before?: Partial<Record<OperationId, RequestHandler[]>>;
  /** Operations mounted elsewhere (health, ahead of the pipeline). */
  except?: readonly OperationId[];
  /**
   * Mount the test helpers (`x-test-helper: true`): true outside production only. When false
   * they are not mounted at all, so they answer 404 like any unknown path.
   */
  testHelpers: boolean;
  /** How long a streamed body may wait for its client, and run in all. */
  streamLimits: StreamLimits;
  /**
   * Parse a body the database rendered (RenderedJson) before sending it, so that response
   * validation, which sees only what `res.json` is given, checks it too (test and development;
   * production sends the text as it is).
   */
  parseRenderedJson?: boolean;
  /**
   * The guard of a write made with an API key (withTransactionGuard): run in each transaction
   * of the request just before COMMIT, it refuses (401) once the key's revocation has committed.
   */
  apiKeyGuard?: (keyId: string) => TransactionGuard;
  /** Where list and statement reads go (DATABASE_READ_URL); absent: every read on the primary. */
  reads?: ReadRouting;
}

/**
 * The operations whose reads may be answered by a standby: the GET operations that read a
 * list, and account statements. Reads of one object stay on the primary (a client that just
 * got an id from another instance's write reads it back at once).
 */
export function readsMayLag(operationId: OperationId): boolean {
  const operation = OPERATIONS[operationId];
  return operation.method === 'get' && operation.secured && (operationId.startsWith('list') || operationId === 'getAccountStatement');
}

/** The caller a read or write belongs to: its user and the organisation it acts for. */
function callerKeys(req: Request): string[] {
  return writerKeys({ userId: req.auth?.userId, organizationId: req.organization?.id ?? req.auth?.apiKey?.organizationId });
}

/** Bounds of a streamed body (CSV statements). */
export interface StreamLimits {
  /** A client that reads nothing for this long is cut. */
  stallTimeoutMs: number;
  /**
   * A stream still running after this long is cut, however its client reads: a client that
   * reads just enough to defeat the stall timer cannot hold its slot (and the stream budget's)
   * for ever.
   */
  maxDurationMs: number;
}

type AnyResult = {
  status?: number;
  data?: unknown;
  message?: string;
  headers?: Record<string, string | number>;
  stream?: (out: ChunkWriter) => Promise<void>;
  resource?: IdempotentResource;
  afterCommit?: () => Promise<AnyResult>;
  refusal?: Error;
};
type AnyHandler = (input: object) => Promise<AnyResult>;

/** Contract path to Express path: /transfers/{transferId} -> /transfers/:transferId */
export function expressPath(contractPath: string): string {
  return contractPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}

/**
 * Applies the operation's `x-access` rule and sets `req.organization`. A Business operation
 * without a rule fails closed (500, logged), never let through.
 */
export function organizationAccessCheck(operationId: string, service: OrganizationAccessService): RequestHandler {
  const rule = accessRuleFor(operationId);
  return async (req, _res, next) => {
    if (!req.auth) throw new UnauthorizedError();
    if (!rule) {
      req.log?.error({ operationId }, 'Business operation has no x-access rule in the contract: refused');
      throw new Error(`operation ${operationId} has no access rule`);
    }
    const orgId = typeof req.params.orgId === 'string' ? req.params.orgId : '';
    req.organization = req.auth.apiKey ? await service.authorizeApiKey(orgId, req.auth.apiKey, rule) : await service.authorize(orgId, req.auth.userId, rule);
    next();
  };
}

/**
 * The caller kind: an API key may call only the operations whose security lists
 * `apiKeyAuth` (its organisation's Business operations); anywhere else, 403 ApiKeyNotAllowed.
 */
export function refuseApiKeys(): RequestHandler {
  return (req, _res, next) => {
    if (req.auth?.apiKey) throw new ApiKeyNotAllowedError();
    next();
  };
}

/**
 * The 404 of a test helper, and the guard in front of each one mounted: a request that carries
 * a live API key (`sk_live_...`) never reaches a test helper, whatever the instance's mode.
 * Test helpers need no authentication (they drive a sandbox); a test key or a token is
 * simply not needed.
 */
export function testHelperGate(enabled: boolean): RequestHandler {
  const liveKey = new RegExp(`^bearer\\s+${API_KEY_PREFIXES.live}`, 'i');
  return (req, _res, next) => {
    if (!enabled || liveKey.test(req.get('authorization') ?? '')) throw new NotFoundError(`No route matches ${req.method} ${req.originalUrl.split('?')[0]}.`);
    next();
  };
}

/** The files of a multipart request (the validator's uploader read them), without their names. */
function uploadedFiles(req: Request): UploadedFile[] | undefined {
  const files = (req as { files?: unknown }).files;
  if (!Array.isArray(files)) return undefined;
  return (files as Array<{ fieldname: string; buffer: Buffer }>).map((file) => ({ field: file.fieldname, bytes: file.buffer }));
}

function inputOf(req: Request, operationId: OperationId) {
  const headers: Record<string, string> = {};
  for (const name of OPERATIONS[operationId].headers as readonly string[]) {
    const value = req.get(name);
    if (value !== undefined) headers[name] = value;
  }
  return {
    path: req.params,
    query: req.query,
    headers,
    body: req.body as unknown,
    rawBody: (req as { rawBody?: Buffer }).rawBody?.toString('utf8'),
    files: uploadedFiles(req),
    requestId: (req as { id?: string }).id ?? '',
    clientIp: clientIp(req),
    userAgent: req.get('user-agent'),
    accepts: (types: string[]) => req.accepts(types),
    caller: req.auth,
    organization: req.organization,
  };
}

function setHeaders(res: Response, headers: Record<string, string | number> | undefined): void {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (name.toLowerCase() === 'vary') res.vary(String(value));
    else res.setHeader(name, String(value));
  }
}

async function sendStream(req: Request, res: Response, status: number, produce: NonNullable<AnyResult['stream']>, limits: StreamLimits): Promise<void> {
  const out: ChunkWriter = {
    start(headers) {
      res.status(status);
      setHeaders(res, headers);
    },
    write: (chunk) => write(res, chunk, limits.stallTimeoutMs),
    end: () => res.end(),
    aborted: () => res.destroyed || res.writableEnded,
  };
  // The overall limit: past it the connection is cut (the client sees a truncated body, never
  // a complete-looking one), the producer sees `aborted` and stops, and its slot is freed.
  const deadline = setTimeout(() => {
    if (res.writableEnded || res.destroyed) return;
    req.log?.warn({ maxDurationMs: limits.maxDurationMs }, 'response stream cut: it ran past its overall time limit');
    res.destroy();
  }, limits.maxDurationMs);
  try {
    await produce(out);
  } catch (error) {
    if (!res.headersSent) throw error;
    // The body has started: no error envelope can follow. Cut the connection so the client
    // sees a truncated body, never a complete-looking one.
    req.log?.error({ err: error }, 'stream failed after the response started');
    res.destroy();
  } finally {
    clearTimeout(deadline);
  }
}

/**
 * The Idempotency-Key of a request to an operation that declares it, scoped to the operationId
 * and the caller (an API key's organisation, otherwise the user); undefined when the contract
 * makes it optional and the request has none. A missing required key or a malformed one: 400.
 */
export function idempotencyClaimOf(req: Request, operationId: OperationId): IdempotencyClaim | undefined {
  const declared = OPERATIONS[operationId].idempotency;
  const raw = req.get('Idempotency-Key');
  if (!declared || (declared === 'optional' && raw === undefined)) return undefined;
  const key = validateIdempotencyKey(raw);
  // No caller to scope a key to (login, refresh): the key is checked, never recorded nor replayed.
  if (!OPERATIONS[operationId].secured) return undefined;
  if (!req.auth) throw new UnauthorizedError();
  // What identifies the request besides the key: its path parameters (when any) and its body
  // (none and an empty object are the same request: `POST /escrows/{id}/fund` with or without `{}`).
  const path = { ...req.params };
  const body = isEmptyObject(req.body) ? undefined : (req.body as unknown);
  // A multipart request is also its files: the same key with other bytes is another request.
  const files = uploadedFiles(req)?.map((file) => ({ field: file.field, sha256: crypto.createHash('sha256').update(file.bytes).digest('hex') }));
  const request = { ...(Object.keys(path).length > 0 ? { path } : {}), body, ...(files?.length ? { files } : {}) };
  const organizationId = req.auth.apiKey?.organizationId;
  return { operation: operationId, key, requestHash: requestHash(request), userId: req.auth.userId, ...(organizationId ? { organizationId } : {}) };
}

function isEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}

const appliedInWindow = new Set<OperationId>(APPLIED_IN_WINDOW);

/**
 * Runs the handler of an operation: when its contract declares an Idempotency-Key, inside the
 * transaction the pipeline opens for it (claim, replay, conflict and completion of the key
 * around it: IdempotencyService.perform), or with the key handed over to the statement that
 * applies a window of decisions (APPLIED_IN_WINDOW), which claims it by the same rules.
 */
async function runHandler(
  req: Request,
  operationId: OperationId,
  handler: AnyHandler,
  idempotency: MountOptions['idempotency'],
  claimsInRead = false,
): Promise<AnyResult> {
  const input = inputOf(req, operationId);
  const { idempotency: declared, secured } = OPERATIONS[operationId];
  if (!declared) return handler(input);
  const claim = idempotencyClaimOf(req, operationId);
  if (!secured) return handler(input);
  const defaultStatus = OPERATIONS[operationId].statuses[0] as number;
  const scope = claim && { userId: claim.userId, organizationId: claim.organizationId, operation: operationId, key: claim.key, requestHash: claim.requestHash };
  const key = scope && appliedInWindow.has(operationId) ? idempotency.pendingKey(scope, defaultStatus) : undefined;
  if (key) return handler({ ...input, key }).then((result) => (key.completedWith ? result : Promise.reject(new Error(`operation ${operationId}: its window did not complete its key`))));
  // No body is stored with the key: a replay answers from the resource, never from a stored body.
  const result = await idempotency.perform<AnyResult>(scope, async (trx) => {
    const result = await handler({ ...input, trx });
    if (result.refusal) return { refusal: result.refusal };
    const resource = result.resource;
    if (!resource) throw new Error(`operation ${operationId} declares an Idempotency-Key but its handler named no resource`);
    return { result, responseStatus: result.status ?? defaultStatus, resource };
  }, claimsInRead ? { responseStatus: defaultStatus } : undefined);
  return result.afterCommit ? result.afterCommit() : result;
}

/** The route answering one operation: input from the request, result into the envelope. */
export function operationRoute(
  operationId: OperationId,
  handler: ((input: never) => Promise<unknown>) | undefined,
  streamLimits: StreamLimits,
  idempotency: MountOptions['idempotency'],
  parseRenderedJson = false,
  apiKeyGuard?: MountOptions['apiKeyGuard'],
  reads?: ReadRouting,
  claimsInRead = false,
): RequestHandler {
  const operation = OPERATIONS[operationId];
  const answer = answerOperation(operationId, handler, streamLimits, idempotency, parseRenderedJson, apiKeyGuard, claimsInRead);
  if (!reads) return answer;
  if (readsMayLag(operationId)) return (req, res) => reads.run(callerKeys(req), () => answer(req, res), () => !res.headersSent);
  if (operation.method === 'get' || !operation.secured) return answer;
  // A write (whatever its outcome: an unknown one may have committed) sends the caller's
  // next reads to the primary for the read-after-write window, counted from its end.
  return async (req, res) => {
    const keys = callerKeys(req);
    await reads.markWrite(keys);
    try {
      await answer(req, res);
    } finally {
      await reads.markWrite(callerKeys(req));
    }
  };
}

function answerOperation(
  operationId: OperationId,
  handler: ((input: never) => Promise<unknown>) | undefined,
  streamLimits: StreamLimits,
  idempotency: MountOptions['idempotency'],
  parseRenderedJson: boolean,
  apiKeyGuard: MountOptions['apiKeyGuard'],
  claimsInRead: boolean,
): (req: Request, res: Response) => Promise<void> {
  const operation = OPERATIONS[operationId];
  const defaultStatus = operation.statuses[0] as number;
  // Any call but a read may change state (whatever x-access.write says): a key revoked meanwhile must not see it commit.
  const writes = operation.method !== 'get' || (operation as { access?: { write?: boolean } }).access?.write === true;
  return async (req, res) => {
    if (operation.secured && !req.auth) throw new UnauthorizedError();
    if (!handler) throw new NotImplementedError(operationId);
    const run = () => runHandler(req, operationId, handler as unknown as AnyHandler, idempotency, claimsInRead);
    const key = writes ? req.auth?.apiKey : undefined;
    const result = key && apiKeyGuard ? await withTransactionGuard(apiKeyGuard(key.id), run) : await run();
    const status = result.status ?? defaultStatus;
    setHeaders(res, result.headers);
    if (result.stream) {
      await sendStream(req, res, status, result.stream, streamLimits);
      return;
    }
    if (result.data instanceof RenderedJson) {
      const text = envelopeText(status, result.data, result.message);
      if (parseRenderedJson) {
        // Validated as any body, and held to the bytes: what the database wrote must be what JSON.stringify writes.
        const parsed = JSON.parse(text) as unknown;
        if (JSON.stringify(parsed) !== text) throw new Error(`${operationId}: the database-rendered JSON differs from JSON.stringify of its value`);
        res.status(status).json(parsed);
      } else {
        if (!res.get('Content-Type')) res.set('Content-Type', 'application/json');
        res.status(status).send(text);
      }
      return;
    }
    res.status(status).json(envelopeOf(status, result.data, result.message));
  };
}

/**
 * Walks the contract and mounts every operation: its path and method, the `x-access` rule of
 * Business operations, the caller, the handler and the envelope. Errors go to the error handler.
 */
export function mountOperations(options: MountOptions): Router {
  const router = Router();
  const notImplemented = new Set<string>(options.notImplemented);
  const except = new Set<string>(options.except ?? []);
  for (const operationId of Object.keys(OPERATIONS) as OperationId[]) {
    if (except.has(operationId)) continue;
    const operation = OPERATIONS[operationId];
    // Outside production only: in production a test helper is not mounted (404, as unknown).
    if (operation.testHelper && !options.testHelpers) continue;
    const handler = options.handlers[operationId] as ((input: never) => Promise<unknown>) | undefined;
    if (!handler && !notImplemented.has(operationId)) throw new Error(`contract operation ${operationId} has no handler`);
    if (handler && notImplemented.has(operationId)) throw new Error(`contract operation ${operationId} has a handler: remove it from the not-implemented list`);
    const callerKind = operation.testHelper ? testHelperGate(true) : operation.apiKey ? undefined : refuseApiKeys();
    const chain: RequestHandler[] = [...(callerKind ? [callerKind] : []), ...(options.before?.[operationId] ?? [])];
    if (operation.access || operation.path.startsWith(`${BUSINESS_PATH}/`)) chain.push(organizationAccessCheck(operationId, options.organizationAccess));
    const claimsInRead = options.writePath?.includes(operationId) ?? false;
    chain.push(operationRoute(operationId, handler, options.streamLimits, options.idempotency, options.parseRenderedJson, options.apiKeyGuard, options.reads, claimsInRead));
    router[operation.method](expressPath(operation.path), ...chain);
  }
  return router;
}

/**
 * Runs before the validator (which would answer 400 for a path parameter that is not a UUID):
 * an authenticated caller gets the same 404 for a malformed orgId as for a foreign one.
 * Without a valid token it stays out of the way so the validator answers 401 first.
 */
export function malformedOrganizationIdIsNotFound(): RequestHandler {
  return (req, _res, next) => {
    const orgId = req.params.orgId;
    if (req.auth && typeof orgId === 'string' && !isUuid(orgId)) throw new OrganizationNotFoundError();
    next();
  };
}
