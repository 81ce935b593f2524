/**
 * The readers of single configuration values: each parses one variable and names it in the
 * error when its value is wrong (src/config.ts composes them into the configuration).
 */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

export function integer(env: Env, key: string, fallback: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${key} must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${key} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A comma-separated list of 1 to 30 delays in seconds (0 to 7 days each), the first one 0. */
export function delays(env: Env, key: string, fallback: number[]): number[] {
  const raw = env[key];
  if (raw === undefined || raw.trim() === '') return fallback;
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.length > 30 || parts.some((part) => !/^\d+$/.test(part) || Number(part) > 604_800)) {
    throw new ConfigError(`${key} must be 1 to 30 comma-separated whole numbers of seconds (at most 604800 each), got "${raw}"`);
  }
  return parts.map(Number);
}

export function boolean(env: Env, key: string, fallback: boolean): boolean {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${key} must be true or false, got "${raw}"`);
}

export function url(env: Env, key: string, fallback: string | undefined, protocols: string[]): string | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${key} must be a URL, got "${raw.replace(/\/\/[^@]*@/, '//***@')}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${key} must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw;
}

/** `XOF:25,EUR:50`: a whole number of minor units per ISO 4217 code (each code once). */
export function minorAmountsByCurrency(env: Env, key: string): Record<string, bigint> {
  const raw = env[key];
  const amounts: Record<string, bigint> = {};
  if (raw === undefined || raw.trim() === '') return amounts;
  for (const part of raw.split(',')) {
    const match = /^\s*([A-Z]{3})\s*:\s*(\d{1,18})\s*$/.exec(part);
    if (!match) throw new ConfigError(`${key} must be a list such as XOF:25,EUR:50 (currency code, a colon, a whole number of minor units), got "${raw}"`);
    const [, code, amount] = match as unknown as [string, string, string];
    if (code in amounts) throw new ConfigError(`${key} names ${code} twice`);
    amounts[code] = BigInt(amount);
  }
  return amounts;
}

export function oneOf<T extends string>(env: Env, key: string, fallback: T, allowed: readonly T[]): T {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${key} must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

/** A Standard Webhooks secret: `whsec_` and at least 24 bytes of base64 (the specification asks for 24 to 64). */
export function webhookSecret(value: string, key: string): string {
  const body = value.startsWith('whsec_') ? value.slice('whsec_'.length) : '';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || Buffer.from(body, 'base64').length < 24) throw new ConfigError(`${key} must be a Standard Webhooks secret: whsec_ and at least 24 bytes in base64`);
  return value;
}
