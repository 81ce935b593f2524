/**
 * The contract as code: the generated operation map and the types a module's handlers are
 * written against. A handler is a plain function from the operation's typed input to one of
 * the results the contract allows; src/http/mount-operations.ts turns it into a route.
 * This folder imports only generated/ and src/db/keyset.ts (the list page types and toPage; floor 0):
 * modules and the HTTP adapter both stand on it.
 */
import type { Knex } from 'knex';
import type { components, operations } from '../../generated/openapi';
import { CONTRACT_VERSION, OPERATIONS, type OperationId } from '../../generated/operations';
import type { PageRequest } from '../db/keyset';
import type { RenderedJson } from '../db/rendered-json';

export { CONTRACT_VERSION, OPERATIONS, type OperationId };
export type { components, operations };
export type Schemas = components['schemas'];

export type Role = components['schemas']['OrganizationRole'];
export const ROLES = ['owner', 'admin', 'representative', 'director', 'finance_manager', 'cashier'] as const satisfies readonly Role[];

type Operation<Id extends OperationId> = (typeof OPERATIONS)[Id];

export type ModuleName = NonNullable<NonNullable<{ [Id in OperationId]: Operation<Id>['access'] }[OperationId]>['module']>;

/** What an API key may do (the contract's ApiKeyScope): `<resource>:read` or `<resource>:write`. */
export type ApiKeyScope = components['schemas']['ApiKeyScope'];

/** The `x-access` rule of a Business operation (see the contract). */
export interface AccessRule {
  /** Roles allowed on the operation. */
  readonly roles: readonly Role[];
  /** The module the operation belongs to; it must be enabled for the organisation. None for the organisation's own settings (its API keys). */
  readonly module: ModuleName | null;
  /** The API key scope the operation needs; none when keys may not call it (they get 403 ApiKeyNotAllowed). */
  readonly scope: ApiKeyScope | null;
  /** A write needs the module open (read_only or locked: 423). */
  readonly write: boolean;
  /** The organisation must be active (otherwise 422 OrganizationInactive). */
  readonly requiresActiveOrg: boolean;
}
export type ModuleAccess = 'open' | 'read_only' | 'locked';

/** The authenticated caller: a bearer token whose session is live, or an organisation's API key. */
export interface Caller {
  /** The user; for an API key, the user who created it (records it makes name them). */
  userId: string;
  /** The session; empty for an API key (only personal routes read it, and they refuse keys). */
  sessionId: string;
  isAdmin: boolean;
  /** Set when the caller is an API key: its organisation and scopes. */
  apiKey?: ApiKeyCaller;
}

/** An API key calling: it acts only on its organisation, within its scopes. */
export interface ApiKeyCaller {
  id: string;
  organizationId: string;
  scopes: readonly ApiKeyScope[];
}

/** The organisation of a Business route once its `x-access` rule let the caller through. */
export interface AuthorizedOrganization {
  id: string;
  name: string;
  status: 'active' | 'inactive' | 'suspended';
  /** The caller's role (an active membership); null for an API key (its scopes decide). */
  role: Role | null;
  /** The API key's scopes when an API key calls (role is then null). */
  apiKeyScopes?: readonly ApiKeyScope[];
  /** Enabled modules and their access; a module absent here is not enabled. */
  moduleAccess: Partial<Record<ModuleName, ModuleAccess>>;
}

/**
 * Operations on the one write path whose decisions are applied a window at a time, in one
 * statement for the requests that arrive together (POST /transfers: write_apply_batch): the
 * pipeline hands the handler the request's Idempotency-Key (`key`, the idempotency module's
 * PendingKey: the same claim, the same rules for a key the claim did not get) instead of a
 * transaction of its own, and checks the key was completed with the answer.
 */
export const APPLIED_IN_WINDOW = ['createTransfer', 'fundEscrow', 'acceptEscrow', 'contributeToTontine'] as const satisfies readonly OperationId[];
type AppliedInWindow = (typeof APPLIED_IN_WINDOW)[number];

/** The Idempotency-Key the pipeline hands an operation applied in a window (APPLIED_IN_WINDOW), to claim and complete with its decision. */
export interface WindowKey {
  /** Fences the key's completion; names the request across its runs. */
  readonly claimToken: string;
}

/** A checked Idempotency-Key: whose it is, for which operation, for which request. */
export interface IdempotencyClaim {
  operation: OperationId;
  key: string;
  /** Hash of the request the key is used with (path parameters and body). */
  requestHash: string;
  userId: string;
  /** Set when an API key calls: the key belongs to its organisation. */
  organizationId?: string;
}

/** What an idempotent request produced, as a replay names it (type, id, status, Location). */
export interface IdempotentResource {
  /** `escrow`, `tontine`, `tontine_contribution`, `invoice`... */
  type: string;
  id: string;
  status: string;
  /** Relative URL of the resource, e.g. `/api/escrows/<id>` (the Location of a replay). */
  location: string;
}

/** The database transaction the pipeline opened for the operation (the one its key completes in). */
export type Transaction = Knex.Transaction;

/**
 * True when the pipeline applies the operation's Idempotency-Key: the contract declares it and
 * the operation has a caller to scope keys to. An operation without one (login, refresh) accepts
 * the header, which the pipeline checks, but records and replays nothing.
 */
type KeyApplied<Id extends OperationId> = Operation<Id>['idempotency'] extends null ? false : Operation<Id>['secured'] extends true ? true : false;

/**
 * What the pipeline gives an operation whose Idempotency-Key it applies: the transaction the key
 * is claimed for and completed in (the handler's effect runs in it), or the key itself when the
 * operation's decisions are applied a window at a time (APPLIED_IN_WINDOW).
 */
type IdempotencyPart<Id extends OperationId> = KeyApplied<Id> extends false
  ? { trx?: undefined }
  : Id extends AppliedInWindow
    ? { key: WindowKey }
    : { trx: Transaction };

/**
 * An operation the pipeline makes idempotent names the resource it produced or changed. Work
 * that must not run inside the key's transaction (an HTTP call: a webhook test delivery) goes in
 * `afterCommit`, whose answer is then the response.
 */
type ResourcePart<Id extends OperationId> = KeyApplied<Id> extends false
  ? unknown
  : Id extends AppliedInWindow
    ? unknown
    : { resource: IdempotentResource; afterCommit?: () => Promise<Answer<Id>> };

/**
 * A refusal that keeps what the handler did (an expired quote is canceled, then 409
 * QuoteExpired): the transaction commits, the key is not consumed, and `refusal` is answered.
 */
type RefusalPart<Id extends OperationId> = KeyApplied<Id> extends false ? never : Id extends AppliedInWindow ? never : { refusal: Error; data?: undefined };

type Part<T> = [NonNullable<T>] extends [never] ? Record<never, never> : NonNullable<T>;
type MultipartBody<T> = [NonNullable<T>] extends [{ content: { 'multipart/form-data': infer Body } }] ? Body : never;
/** The JSON body; for a `multipart/form-data` operation its form fields (a file field holds '': its bytes are in `files`). */
type JsonBody<T> = NonNullable<T> extends { content: { 'application/json': infer Body } } ? Body : [MultipartBody<T>] extends [never] ? undefined : MultipartBody<T>;

/**
 * A file of a `multipart/form-data` request (a `format: binary` field of the contract), read
 * into memory by the validator's uploader within its limits (src/http/app.ts). Its name and
 * declared type are not passed on: a file is what its bytes are, and a name may be personal data.
 */
export interface UploadedFile {
  /** The form field it came in. */
  field: string;
  bytes: Buffer;
}
type FilesPart<T> = [MultipartBody<T>] extends [never] ? { files?: undefined } : { files: UploadedFile[] };

/** What a handler of `Id` receives: everything the contract lets the request carry, validated. */
export type HandlerInput<Id extends OperationId> = {
  path: Part<operations[Id]['parameters']['path']>;
  query: Part<operations[Id]['parameters']['query']>;
  headers: Part<operations[Id]['parameters']['header']>;
  body: JsonBody<operations[Id]['requestBody']>;
  /** The JSON body's bytes as received (UTF-8), for a signature computed over them. */
  rawBody?: string;
  /** The request id (X-Request-Id), for audit trails. */
  requestId: string;
  /** The caller's address as the rate limiters count it (an IPv6 caller by its /56). */
  clientIp: string;
  /** The User-Agent header, when sent (kept with a session, shown in GET /me/sessions). */
  userAgent?: string;
  /** Content negotiation: which of `types` the Accept header prefers, false when none. */
  accepts(types: string[]): string | false;
} & (Operation<Id>['secured'] extends true ? { caller: Caller } : { caller?: undefined }) &
  (Operation<Id>['access'] extends null ? { organization?: undefined } : { organization: AuthorizedOrganization }) &
  IdempotencyPart<Id> &
  FilesPart<operations[Id]['requestBody']>;

type Responses<Id extends OperationId> = operations[Id]['responses'];
type DataStatus<Id extends OperationId> = Operation<Id>['statuses'][number] & keyof Responses<Id>;
type DefaultStatus<Id extends OperationId> = Operation<Id>['statuses'][0];

/** Headers the pipeline sets itself (request id, rate limits): a handler never names them. */
type PipelineHeader = 'X-Request-Id' | 'RateLimit' | 'RateLimit-Policy';
type DocumentedHeaders<R> = R extends { headers: infer H }
  ? { [K in keyof H as string extends K ? never : K extends PipelineHeader ? never : K]: H[K] extends number ? number | string : string }
  : Record<never, never>;
/** Documented headers (required ones must be given) and any other header, such as Cache-Control. */
type HeadersPart<R> = Record<never, never> extends DocumentedHeaders<R>
  ? { headers?: DocumentedHeaders<R> & Record<string, string | number> }
  : { headers: DocumentedHeaders<R> & Record<string, string | number> };

type StatusPart<Id extends OperationId, S> = S extends DefaultStatus<Id> ? { status?: S } : { status: S };

type JsonResult<Id extends OperationId, S extends DataStatus<Id>> = Responses<Id>[S] extends {
  content: { 'application/json': { data: infer Data } };
}
  ? StatusPart<Id, S> & HeadersPart<Responses<Id>[S]> & { data: Data | RenderedJson<Data>; message?: string; stream?: undefined }
  : never;

/**
 * A body written in chunks (the CSV statement). `start` sends the status and headers, so an
 * error thrown before it still becomes an error envelope; after it, the connection is cut.
 */
export interface ChunkWriter {
  start(headers: Record<string, string>): void;
  /** Resolves when the chunk is taken (back pressure); a stalled client is cut. */
  write(chunk: string): Promise<void>;
  end(): void;
  /** The client went away or the response was cut: stop producing. */
  aborted(): boolean;
}
type StreamResult<Id extends OperationId, S extends DataStatus<Id>> = Responses<Id>[S] extends { content: infer Content }
  ? Exclude<keyof Content, 'application/json'> extends never
    ? never
    : StatusPart<Id, S> & { headers?: Record<string, string>; stream: (out: ChunkWriter) => Promise<void>; data?: undefined }
  : never;

/** A status the contract documents with a body of its shape. */
type Answer<Id extends OperationId> = { [S in DataStatus<Id>]: JsonResult<Id, S> | StreamResult<Id, S> }[DataStatus<Id>];

/** What a handler of `Id` may answer: a status the contract documents with a body of its shape. */
export type HandlerResult<Id extends OperationId> = (Answer<Id> & ResourcePart<Id>) | RefusalPart<Id>;

export type Handler<Id extends OperationId> = (input: HandlerInput<Id>) => Promise<HandlerResult<Id>>;

/** A module's handlers, keyed by operationId. */
export type Handlers<Id extends OperationId> = { [K in Id]: Handler<K> };

/** The page every list of the contract answers, built by the keyset helper that fetched its rows. */
export { toPage as toListPage, toRenderedPage as toRenderedListPage, type Page as ListPage, type PageRequest } from '../db/keyset';
export { RenderedJson } from '../db/rendered-json';

/** The `limit` of a list when the request gives none (the contract's parameters/Limit.yaml default). */
export const DEFAULT_PAGE_LIMIT = 50;

/** A list operation's `limit` (the contract's default when absent) and `starting_after`. */
export function pageRequest(query: { limit?: number; starting_after?: string }): PageRequest {
  return { limit: query.limit ?? DEFAULT_PAGE_LIMIT, startingAfter: query.starting_after };
}

/** Every module an `x-access` rule names (the compiler checks the list is complete). */
export const MODULES = ['payment_links', 'invoices', 'accounts', 'network_status'] as const satisfies readonly ModuleName[];
type Missing<All, Listed> = Exclude<All, Listed> extends never ? true : Exclude<All, Listed>;
const modulesComplete: Missing<ModuleName, (typeof MODULES)[number]> = true;
const rolesComplete: Missing<Role, (typeof ROLES)[number]> = true;
void modulesComplete;
void rolesComplete;
