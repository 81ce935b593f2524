/**
 * The adapters the platform talks to the outside world through (SMS and e-mail, identity
 * checks). Outside production each falls back to its sandbox; production refuses to start
 * until each is named, so a sandbox never stands in for a real provider by omission.
 */
import { ConfigError, type Env, integer, oneOf } from './config-values';

type Mode = 'development' | 'test' | 'production';

/** NOTIFIER (`sandbox`: the outbox; no default in production) and OUTBOX_RETENTION_HOURS. */
export interface NotificationsConfig { notifier: 'sandbox'; outboxRetentionHours: number }

/**
 * IDENTITY_PROVIDER (`sandbox`: the outcome follows the ID number; no default in production),
 * IDENTITY_PROCESS_INTERVAL_SECONDS and IDENTITY_EXPIRE_INTERVAL_SECONDS: the periods of the
 * jobs that hand submitted sessions to the provider and expire unfinished ones.
 */
export interface IdentityConfig { provider: 'sandbox'; processEverySeconds: number; expireEverySeconds: number }

function requiredInProduction(env: Env, nodeEnv: Mode, key: string, allowed: readonly string[], why: string): void {
  if (nodeEnv === 'production' && (env[key] === undefined || env[key] === '')) {
    throw new ConfigError(`${key} must be set in production (one of ${allowed.join(', ')}); ${why}, so production uses it only when told ${key}=sandbox`);
  }
}

/** Production never falls back to the sandbox notifier silently (customers would get no code). */
export function readNotifications(env: Env, nodeEnv: Mode): NotificationsConfig {
  requiredInProduction(env, nodeEnv, 'NOTIFIER', ['sandbox'], 'the sandbox notifier keeps messages in the outbox instead of sending them');
  return {
    notifier: oneOf(env, 'NOTIFIER', 'sandbox', ['sandbox'] as const),
    outboxRetentionHours: integer(env, 'OUTBOX_RETENTION_HOURS', 72, 1, 24 * 365),
  };
}

/** Production never verifies identities with the sandbox silently (its outcome follows the ID number typed in). */
export function readIdentity(env: Env, nodeEnv: Mode): IdentityConfig {
  requiredInProduction(env, nodeEnv, 'IDENTITY_PROVIDER', ['sandbox'], 'the sandbox identity provider decides by the last digits of the ID number and checks nothing');
  return {
    provider: oneOf(env, 'IDENTITY_PROVIDER', 'sandbox', ['sandbox'] as const),
    processEverySeconds: integer(env, 'IDENTITY_PROCESS_INTERVAL_SECONDS', 2, 1, 3_600),
    expireEverySeconds: integer(env, 'IDENTITY_EXPIRE_INTERVAL_SECONDS', 300, 1, 86_400),
  };
}
