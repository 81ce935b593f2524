import crypto from 'node:crypto';
import { parseDatabaseUrl } from './db/multi-host';
import type { DatabaseReadConfig } from './db/read-routing';
import { boolean, ConfigError, webhookSecret, delays, type Env, integer, minorAmountsByCurrency, oneOf, url } from './config-values';
import { readCryptoConfig, type CryptoConfig } from './config-crypto';
import { readIdentity, readNotifications, type IdentityConfig, type NotificationsConfig } from './config-providers';
import { readBusinessVerificationConfig, type BusinessVerificationConfig } from './config-business-verification';
import { parsePiiKeyring, PiiCipherError, type PiiKeyring } from './pii-cipher';

export { ConfigError } from './config-values';
export type { IdentityConfig, NotificationsConfig } from './config-providers';
/**
 * The only reader of process.env. Every value is parsed and validated once, at boot;
 * a bad value stops the process with one clear line instead of a surprise at run time.
 */

export type NodeEnv = 'development' | 'test' | 'production';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type LogFormat = 'auto' | 'json' | 'pretty';

export interface RateLimitConfig {
  /** Window length in milliseconds, shared by every limiter. */
  windowMs: number;
  /** Requests per window per authenticated user. */
  authenticatedPerWindow: number;
  /** Requests per window per IP on unauthenticated routes. */
  anonymousPerWindow: number;
  /** Login attempts per window per IP and identifier. */
  loginPerWindow: number;
  /** GET /api/health per window per IP, counted by each instance in its own memory. */
  healthPerWindow: number;
  /** Login attempts per window per IP, whatever the identifier. */
  loginPerIpPerWindow: number;
  /** Requests per window per API key (RATE_LIMIT_API_KEY). */
  apiKeyPerWindow: number;
  /** Messages with a code (sign-up, password reset): per IP and per identifier within their own window. */
  codes: { windowMs: number; perIp: number; perIdentifier: number };
}

export interface Config {
  nodeEnv: NodeEnv;
  port: number;
  payPort: number;
  /** Prometheus /metrics: its own port (0: not served) and address (loopback by default). */
  metrics: { port: number; host: string };
  payUrl: string;
  databaseUrl: string | undefined;
  /** Directory of the embedded PostgreSQL when DATABASE_URL is unset. */
  embeddedDataDir: string;
  /** Reads that may lag: list and statement reads on a standby (docs/operators/high-availability.md). */
  databaseRead: DatabaseReadConfig;
  redisUrl: string | undefined;
  /** Declares that exactly one instance runs, so in-memory rate-limit counters are the whole count. */
  singleInstance: boolean;
  jwt: {
    secret: string;
    issuer: string;
    audience: string;
    accessTtlSeconds: number;
    refreshTtlSeconds: number;
  };
  login: {
    /** Failed attempts from one source address on one account before that source is locked out of it. */
    maxFailedAttempts: number;
    lockMinutes: number;
    /** Failed attempts from all sources on one account before it is locked for every source not known to it. */
    accountMaxFailedAttempts: number;
    /** How long a source that logged in successfully stays known to the account (not stopped by the account-wide lock). */
    knownSourceDays: number;
    /** Password verifications running at once in one process; beyond, 503 ServiceUnavailable. */
    maxConcurrentVerifications: number;
  };
  idempotencyTtlHours: number;
  rateLimit: RateLimitConfig;
  /** API keys of organisations. */
  apiKeys: {
    /** API_KEY_PEPPER: the HMAC key of stored secrets; required in production, derived from JWT_SECRET elsewhere. */
    pepper: string;
    /** `live` (sk_live_) in production, `test` (sk_test_) elsewhere. */
    environment: 'live' | 'test';
  };
  /** Secret of the payment page's CSRF tokens and signed amounts, and of statement cursors. */
  paySecret: string;
  /** MOBILE_MONEY_CALLBACK_SECRET: the `whsec_` key the mobile-money rail signs its callbacks with. */
  mobileMoneyCallbackSecret: string;
  logLevel: LogLevel;
  /** `auto`: human-readable lines in development at a terminal, JSON otherwise. */
  logFormat: LogFormat;
  bodyLimitBytes: number;
  shutdownTimeoutMs: number;
  trustProxy: number;
  /** Seed the demo data when the database is empty (never in production). */
  seedDemo: boolean;
  /** Validate responses against the contract (test and development). */
  validateResponses: boolean;
  /** Bounds of a network-status change: past them it answers 503 StatusUnavailable. */
  networkStatus: { lockTimeoutMs: number; statementTimeoutMs: number; retryAfterSeconds: number };
  statements: {
    /** A CSV statement whose client reads nothing for this long is cut. */
    streamStallTimeoutMs: number;
    /** A CSV statement still streaming after this long is cut, however its client reads. */
    streamMaxDurationMs: number;
    /** CSV statements streaming at once per user (beyond: 429) and in total (beyond: 503). */
    streamsPerUser: number;
    streamsTotal: number;
  };
  escrows: {
    /** ESCROW_FEE_BPS: the escrow fee in basis points of the amount (100 = 1 %). */
    feeBps: number;
    /** ESCROW_MIN_FEE: the minimum fee per currency, in minor units (`XOF:25,EUR:50`); none by default. */
    minFeeMinor: Readonly<Record<string, bigint>>;
    /** How often the automatic release looks for escrows whose inspection period ended. */
    releaseIntervalMs: number;
    /** At most this many escrows released per run (the next run takes the rest). */
    releaseBatchSize: number;
  };
  /** EVENT_RETENTION_DAYS: events older than this are purged (at least 30; 90 by default). */
  eventRetentionDays: number;
  webhooks: {
    /** WEBHOOK_TIMEOUT_MS: a delivery not answered 2xx within this time failed. */
    timeoutMs: number;
    /** WEBHOOK_RETRY_DELAYS_SECONDS: the delay before each attempt (the first is 0), then `exhausted`. */
    retryDelaysSeconds: readonly number[];
    /** WEBHOOK_DISABLE_AFTER_HOURS: an endpoint whose every delivery failed this long is disabled. */
    disableAfterHours: number;
    /** WEBHOOK_ALLOW_PRIVATE_TARGETS: http and private or loopback targets allowed (never in production). */
    allowPrivateTargets: boolean;
    /** WEBHOOK_DISPATCH_INTERVAL_SECONDS: the period of the `webhooks.dispatch-due` job (due deliveries, claimed with SKIP LOCKED). */
    dispatchEverySeconds: number;
    /** WEBHOOK_CONNECT_TIMEOUT_MS: a receiver not connected (DNS and TCP) within this time failed; at most WEBHOOK_TIMEOUT_MS. */
    connectTimeoutMs: number;
    /** WEBHOOK_MAX_IN_FLIGHT: attempts under way at once on one instance. */
    maxInFlight: number;
    /** WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: attempts under way at once to one endpoint, across instances. */
    maxInFlightPerEndpoint: number;
    /** WEBHOOK_MAX_IN_FLIGHT_PER_ORGANIZATION: attempts under way at once to one organisation's endpoints, across instances. */
    maxInFlightPerOrganization: number;
  };
  /** The job queue (pg-boss): see src/jobs/jobs.ts and docs/operators/background-jobs.md. */
  jobs: JobsConfig;
  /** PII_ENCRYPTION_KEY and PII_ENCRYPTION_PREVIOUS_KEYS: the keys of personal data at rest (src/pii-cipher.ts). */
  pii: PiiKeyring;
  identity: IdentityConfig;
  notifications: NotificationsConfig; // SMS and e-mail: docs/operators/notifications.md
  crypto: CryptoConfig;
  businessVerification: BusinessVerificationConfig; // KYB: src/config-business-verification.ts
}


export interface JobsConfig {
  /** JOBS_POLLING_INTERVAL_MS: how often each worker asks for its queue's next job. */
  pollingIntervalMs: number;
  /** JOBS_MAINTENANCE_INTERVAL_SECONDS: how often expired jobs (a dead worker's) are found and retried. */
  maintenanceIntervalSeconds: number;
  /** JOBS_EXPIRE_SECONDS: a job still running after this long counts as failed (its worker died) and is retried. */
  expireInSeconds: number;
  /** JOBS_RETRY_LIMIT and JOBS_RETRY_DELAY_SECONDS: retries of a failed job, and the wait before each. */
  retryLimit: number;
  retryDelaySeconds: number;
}

export const DEFAULT_JWT_SECRET = 'local-development-secret-change-me-0123456789';
const DEFAULT_PAY_SECRET = 'local-pay-page-secret-change-me-0123456789';
export const DEFAULT_MOBILE_MONEY_CALLBACK_SECRET = 'whsec_c2FuZGJveC1tb2JpbGUtbW9uZXktY2FsbGJhY2tz';
/** The development key of personal data at rest: public, so refused in production. */
export const DEFAULT_PII_ENCRYPTION_KEY = 'dev:6c6f63616c2d646576656c6f706d656e742d7069692d6b65792d6368616e6765';

/** LOG_FORMAT: `auto` (readable at a terminal in development), `json` or `pretty`; production logs JSON only. */
function logFormat(env: Env, nodeEnv: NodeEnv): LogFormat {
  const format = oneOf<LogFormat>(env, 'LOG_FORMAT', 'auto', ['auto', 'json', 'pretty']);
  if (format === 'pretty' && nodeEnv === 'production') throw new ConfigError('LOG_FORMAT=pretty is refused in production (log lines are JSON there, for log shippers)');
  return format;
}

/** Private webhook targets: allowed by default outside production, refused in production. */
function allowPrivateTargets(env: Env, nodeEnv: NodeEnv): boolean {
  const allowed = boolean(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', nodeEnv !== 'production');
  if (allowed && nodeEnv === 'production') throw new ConfigError('WEBHOOK_ALLOW_PRIVATE_TARGETS=true is refused in production (webhook URLs must reach public https hosts)');
  return allowed;
}

/**
 * A PostgreSQL URL with one host, or several in libpq's form
 * (`postgres://h1:5432,h2:5433/db?target_session_attrs=read-write`): the pool follows the primary.
 */
function databaseUrl(env: Env, key: string): string | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  // One host: read as any URL (its messages); several: the WHATWG parser refuses them.
  if (!/^[a-z]+:\/\/[^/?#]*,/i.test(raw)) url(env, key, undefined, ['postgres:', 'postgresql:']);
  try {
    parseDatabaseUrl(raw);
  } catch (error) {
    throw new ConfigError(`${key}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return raw;
}

function secret(env: Env, key: string, fallback: string, nodeEnv: NodeEnv): string {
  const raw = env[key];
  const value = raw === undefined || raw === '' ? fallback : raw;
  if (value.length < 32) throw new ConfigError(`${key} must be at least 32 characters long`);
  if (nodeEnv === 'production' && value === fallback) {
    throw new ConfigError(`${key} must be set in production (the default development secret is refused; NODE_ENV unset means production)`);
  }
  return value;
}

/** PII_ENCRYPTION_KEY (its development default refused in production) and PII_ENCRYPTION_PREVIOUS_KEYS: see src/pii-cipher.ts. Never echoed. */
function piiKeys(env: Env, nodeEnv: NodeEnv): PiiKeyring {
  const text = env.PII_ENCRYPTION_KEY?.trim() || DEFAULT_PII_ENCRYPTION_KEY;
  if (nodeEnv === 'production' && text === DEFAULT_PII_ENCRYPTION_KEY) throw new ConfigError('PII_ENCRYPTION_KEY must be set in production (the default development key is refused; NODE_ENV unset means production)');
  try {
    return parsePiiKeyring(text, env.PII_ENCRYPTION_PREVIOUS_KEYS);
  } catch (error) {
    throw error instanceof PiiCipherError ? new ConfigError(error.message) : error;
  }
}

/**
 * API_KEY_PEPPER, the HMAC key of stored API key secrets: required in production (changing it
 * invalidates every key); in development and tests a default derived from JWT_SECRET, so a
 * local start needs nothing and no public constant is ever a production pepper.
 */
function apiKeyPepper(env: Env, nodeEnv: NodeEnv): string {
  const raw = env.API_KEY_PEPPER;
  if (raw === undefined || raw === '') {
    if (nodeEnv === 'production') throw new ConfigError('API_KEY_PEPPER must be set in production (at least 32 characters; it keys the hashes of API key secrets)');
    const jwtSecret = env.JWT_SECRET || DEFAULT_JWT_SECRET;
    return crypto.createHmac('sha256', jwtSecret).update('api-key-pepper').digest('hex');
  }
  if (raw.length < 32) throw new ConfigError('API_KEY_PEPPER must be at least 32 characters long');
  return raw;
}

/**
 * Without Redis every instance counts rate limits on its own, so N instances allow N times
 * the configured limits. Production therefore needs REDIS_URL, unless SINGLE_INSTANCE says
 * only one instance runs.
 */
function sharedRateLimitStore(env: Env, nodeEnv: NodeEnv): { redisUrl: string | undefined; singleInstance: boolean } {
  const redisUrl = url(env, 'REDIS_URL', undefined, ['redis:', 'rediss:']);
  const singleInstance = boolean(env, 'SINGLE_INSTANCE', false);
  if (nodeEnv === 'production' && !redisUrl && !singleInstance) {
    throw new ConfigError('REDIS_URL must be set in production (without it each instance counts rate limits alone); set SINGLE_INSTANCE=true if exactly one instance runs');
  }
  return { redisUrl, singleInstance };
}

/**
 * The mode. Unset means production: the safe side is the default, so an instance started
 * without NODE_ENV refuses the public default secrets and the embedded database and never
 * seeds the demo data. `make run` (development) and the test suite (test) say their mode.
 */
function mode(env: Env): NodeEnv {
  return oneOf<NodeEnv>(env, 'NODE_ENV', 'production', ['development', 'test', 'production']);
}

/** The embedded PostgreSQL is for development and tests: production needs a real server. */
function refuseEmbeddedInProduction(value: string | undefined, nodeEnv: NodeEnv): void {
  if (nodeEnv === 'production' && !value) {
    throw new ConfigError('DATABASE_URL must be set in production (the embedded database is for development and tests; set NODE_ENV=development to use it)');
  }
}

export function loadConfig(env: Env = process.env): Config {
  const config = readConfig(env);
  refuseEmbeddedInProduction(config.databaseUrl, config.nodeEnv);
  if (config.databaseRead.maxLagMs + config.databaseRead.lagCheckIntervalMs > 10_000) throw new ConfigError('DATABASE_READ_MAX_LAG_MS + DATABASE_READ_LAG_CHECK_MS must be at most 10000: account statements end 15 s before now, and a standby that may lag that long plus one check period still holds every line of them');
  if (config.databaseRead.url && !config.databaseUrl) throw new ConfigError('DATABASE_READ_URL needs DATABASE_URL: the embedded database has no standby to read from (unset DATABASE_READ_URL, or set DATABASE_URL to the primary)');
  return config;
}

function readConfig(env: Env): Config {
  const nodeEnv = mode(env);
  const payPort = integer(env, 'PAY_PORT', 8081, 0, 65535);
  const payUrl = url(env, 'PAY_URL', `http://localhost:${payPort}`, ['http:', 'https:']) as string;
  return {
    nodeEnv,
    port: integer(env, 'PORT', 8080, 0, 65535),
    metrics: { port: integer(env, 'METRICS_PORT', 9464, 0, 65535), host: env.METRICS_HOST || '127.0.0.1' },
    payPort,
    payUrl: payUrl.replace(/\/+$/, ''),
    databaseUrl: databaseUrl(env, 'DATABASE_URL'),
    embeddedDataDir: env.EMBEDDED_DATA_DIR || './.data/pg',
    databaseRead: { url: databaseUrl(env, 'DATABASE_READ_URL'), afterWriteSeconds: integer(env, 'DATABASE_READ_AFTER_WRITE_SECONDS', 5, 0, 3_600), maxLagMs: integer(env, 'DATABASE_READ_MAX_LAG_MS', 1_000, 0, 10_000), lagCheckIntervalMs: integer(env, 'DATABASE_READ_LAG_CHECK_MS', 1_000, 100, 5_000) },
    jwt: {
      secret: secret(env, 'JWT_SECRET', DEFAULT_JWT_SECRET, nodeEnv),
      issuer: env.JWT_ISSUER || 'fintech-platform',
      audience: env.JWT_AUDIENCE || 'fintech-platform-api',
      accessTtlSeconds: integer(env, 'JWT_ACCESS_TTL_SECONDS', 900, 30, 86_400),
      refreshTtlSeconds: integer(env, 'JWT_REFRESH_TTL_SECONDS', 30 * 86_400, 300, 365 * 86_400),
    },
    login: {
      maxFailedAttempts: integer(env, 'LOGIN_MAX_FAILED_ATTEMPTS', 5, 1, 100),
      lockMinutes: integer(env, 'LOGIN_LOCK_MINUTES', 15, 1, 24 * 60),
      accountMaxFailedAttempts: integer(env, 'LOGIN_ACCOUNT_MAX_FAILED_ATTEMPTS', 20, 1, 10_000),
      knownSourceDays: integer(env, 'LOGIN_KNOWN_SOURCE_DAYS', 30, 0, 365),
      maxConcurrentVerifications: integer(env, 'LOGIN_MAX_CONCURRENT_VERIFICATIONS', 8, 1, 1_000),
    },
    idempotencyTtlHours: integer(env, 'IDEMPOTENCY_TTL_HOURS', 24, 24, 24 * 30),
    rateLimit: readRateLimit(env),
    paySecret: secret(env, 'PAY_SECRET', DEFAULT_PAY_SECRET, nodeEnv),
    mobileMoneyCallbackSecret: webhookSecret(secret(env, 'MOBILE_MONEY_CALLBACK_SECRET', DEFAULT_MOBILE_MONEY_CALLBACK_SECRET, nodeEnv), 'MOBILE_MONEY_CALLBACK_SECRET'),
    apiKeys: { pepper: apiKeyPepper(env, nodeEnv), environment: nodeEnv === 'production' ? 'live' : 'test' },
    pii: piiKeys(env, nodeEnv),
    logLevel: oneOf<LogLevel>(env, 'LOG_LEVEL', nodeEnv === 'test' ? 'silent' : 'info', [
      'fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent',
    ]),
    logFormat: logFormat(env, nodeEnv),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 100 * 1024, 1024, 10 * 1024 * 1024),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 120_000),
    trustProxy: integer(env, 'TRUST_PROXY_HOPS', 0, 0, 10),
    // Only a start that says it runs for development seeds (its platform administrator has a public password).
    seedDemo: nodeEnv === 'development' && boolean(env, 'SEED_DEMO', true),
    validateResponses: nodeEnv !== 'production',
    ...readWorkSettings(env, nodeEnv),
    // Last: the secrets' own errors come first.
    ...sharedRateLimitStore(env, nodeEnv),
    notifications: readNotifications(env, nodeEnv),
    identity: readIdentity(env, nodeEnv),
    crypto: readCryptoConfig(env, nodeEnv, env.JWT_SECRET || DEFAULT_JWT_SECRET),
    businessVerification: readBusinessVerificationConfig(env, nodeEnv),
  };
}

/** The per-window budgets of the API, login, health and API-key limiters. */
function readRateLimit(env: Env): Config['rateLimit'] {
  return {
    windowMs: integer(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1_000, 3_600_000),
    authenticatedPerWindow: integer(env, 'RATE_LIMIT_AUTHENTICATED', 600, 1, 1_000_000),
    anonymousPerWindow: integer(env, 'RATE_LIMIT_ANONYMOUS', 300, 1, 1_000_000),
    loginPerWindow: integer(env, 'RATE_LIMIT_LOGIN', 10, 1, 1_000_000),
    healthPerWindow: integer(env, 'RATE_LIMIT_HEALTH', 1_200, 1, 1_000_000),
    loginPerIpPerWindow: integer(env, 'RATE_LIMIT_LOGIN_PER_IP', 30, 1, 1_000_000),
    apiKeyPerWindow: integer(env, 'RATE_LIMIT_API_KEY', 1_200, 1, 1_000_000),
    codes: {
      windowMs: integer(env, 'RATE_LIMIT_CODES_WINDOW_MS', 3_600_000, 1_000, 86_400_000),
      perIp: integer(env, 'RATE_LIMIT_CODES_PER_IP', 20, 1, 1_000_000),
      perIdentifier: integer(env, 'RATE_LIMIT_CODES_PER_IDENTIFIER', 5, 1, 1_000_000),
    },
  };
}

/** Read in this order after the general settings: an invalid value names the first one wrong. */
function readWorkSettings(env: Env, nodeEnv: NodeEnv): Pick<Config, 'networkStatus' | 'statements' | 'escrows' | 'eventRetentionDays' | 'webhooks' | 'jobs'> {
  return {
    networkStatus: {
      lockTimeoutMs: integer(env, 'NETWORK_STATUS_LOCK_TIMEOUT_MS', 2_000, 10, 60_000),
      statementTimeoutMs: integer(env, 'NETWORK_STATUS_STATEMENT_TIMEOUT_MS', 5_000, 10, 60_000),
      retryAfterSeconds: integer(env, 'NETWORK_STATUS_RETRY_AFTER_SECONDS', 1, 1, 3_600),
    },
    statements: {
      streamStallTimeoutMs: integer(env, 'STATEMENT_STREAM_STALL_TIMEOUT_MS', 30_000, 100, 600_000),
      streamMaxDurationMs: integer(env, 'STATEMENT_STREAM_MAX_DURATION_MS', 300_000, 100, 3_600_000),
      streamsPerUser: integer(env, 'STATEMENT_STREAMS_PER_USER', 2, 1, 100),
      streamsTotal: integer(env, 'STATEMENT_STREAMS_TOTAL', 4, 1, 1_000),
    },
    escrows: {
      feeBps: integer(env, 'ESCROW_FEE_BPS', 100, 0, 10_000),
      minFeeMinor: minorAmountsByCurrency(env, 'ESCROW_MIN_FEE'),
      releaseIntervalMs: integer(env, 'ESCROW_RELEASE_INTERVAL_MS', 30_000, 100, 3_600_000),
      releaseBatchSize: integer(env, 'ESCROW_RELEASE_BATCH_SIZE', 100, 1, 10_000),
    },
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 90, 30, 3_650),
    webhooks: {
      timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
      retryDelaysSeconds: delays(env, 'WEBHOOK_RETRY_DELAYS_SECONDS', [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]),
      disableAfterHours: integer(env, 'WEBHOOK_DISABLE_AFTER_HOURS', 120, 1, 8_760),
      allowPrivateTargets: allowPrivateTargets(env, nodeEnv),
      dispatchEverySeconds: integer(env, 'WEBHOOK_DISPATCH_INTERVAL_SECONDS', 2, 1, 3_600),
      connectTimeoutMs: integer(env, 'WEBHOOK_CONNECT_TIMEOUT_MS', 3_000, 100, 120_000),
      maxInFlight: integer(env, 'WEBHOOK_MAX_IN_FLIGHT', 64, 1, 1_000),
      maxInFlightPerEndpoint: integer(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', 4, 1, 100),
      maxInFlightPerOrganization: integer(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_ORGANIZATION', 16, 1, 1_000),
    },
    jobs: {
      pollingIntervalMs: integer(env, 'JOBS_POLLING_INTERVAL_MS', 2_000, 500, 60_000),
      maintenanceIntervalSeconds: integer(env, 'JOBS_MAINTENANCE_INTERVAL_SECONDS', 60, 1, 3_600),
      expireInSeconds: integer(env, 'JOBS_EXPIRE_SECONDS', 300, 1, 86_400),
      retryLimit: integer(env, 'JOBS_RETRY_LIMIT', 5, 0, 1_000),
      retryDelaySeconds: integer(env, 'JOBS_RETRY_DELAY_SECONDS', 5, 0, 3_600),
    },
  };
}
