/**
 * The API key format, pure: no I/O, no clock.
 *
 *   sk_test_ 4kQ9vX2mB7pZ _ <32 random base62> <6-character checksum>
 *   └prefix┘ └public id─┘   └────secret─────┘ └CRC32 in base62────┘
 *
 * `sk_live_` in production, `sk_test_` in every other environment. The public id (12 base62
 * characters) finds the key's row; only a hash of the secret is stored. The checksum is the
 * CRC32 of everything before it, in base62 on 6 characters (as GitHub's tokens end): a
 * scanner recognises a real key, and a mistyped key is refused before any database work.
 */

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const API_KEY_PREFIXES = { live: 'sk_live_', test: 'sk_test_' } as const;
export type ApiKeyEnvironment = keyof typeof API_KEY_PREFIXES;
export const PUBLIC_ID_LENGTH = 12;
export const SECRET_LENGTH = 32;
export const CHECKSUM_LENGTH = 6;

/** The parts of a well-formed key whose checksum is right. */
export interface ParsedApiKey {
  environment: ApiKeyEnvironment;
  publicId: string;
  secret: string;
}

const CRC32_TABLE: readonly number[] = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE 802.3, as zlib) of the UTF-8 bytes of `text`, as an unsigned integer. */
export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) crc = (CRC32_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** `value` (a non-negative integer) in base62, left-padded with `0` to `width` characters. */
export function toBase62(value: number, width: number): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError('toBase62 takes a non-negative safe integer');
  let digits = '';
  let rest = value;
  do {
    digits = BASE62_ALPHABET[rest % 62] + digits;
    rest = Math.floor(rest / 62);
  } while (rest > 0);
  if (digits.length > width) throw new RangeError(`${value} does not fit in ${width} base62 characters`);
  return digits.padStart(width, '0');
}

/** The 6-character checksum of a key's body (everything before the checksum). */
export function checksumOf(body: string): string {
  return toBase62(crc32(body), CHECKSUM_LENGTH);
}

/** The key a client is given: prefix, public id, `_`, secret, checksum. */
export function formatApiKey(environment: ApiKeyEnvironment, publicId: string, secret: string): string {
  const body = `${API_KEY_PREFIXES[environment]}${publicId}_${secret}`;
  return body + checksumOf(body);
}

/** The non-secret lead of a key, shown in lists to recognise it: `sk_test_4kQ9vX2mB7pZ`. */
export function displayPrefix(environment: ApiKeyEnvironment, publicId: string): string {
  return `${API_KEY_PREFIXES[environment]}${publicId}`;
}

const KEY_SHAPE = new RegExp(
  `^sk_(live|test)_([0-9A-Za-z]{${PUBLIC_ID_LENGTH}})_([0-9A-Za-z]{${SECRET_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`,
);

/** Whether `token` is shaped as a key at all (`sk_live_` / `sk_test_`): keys and JWTs share the Bearer header. */
export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(API_KEY_PREFIXES.live) || token.startsWith(API_KEY_PREFIXES.test);
}

/**
 * The parts of `token` when it is a key of `environment` with a right checksum; undefined for
 * anything else (another environment's key, a typo, a truncated copy), without any I/O.
 */
export function parseApiKey(token: string, environment: ApiKeyEnvironment): ParsedApiKey | undefined {
  const match = KEY_SHAPE.exec(token);
  if (!match) return undefined;
  const [, keyEnvironment, publicId, secret, checksum] = match as unknown as [string, ApiKeyEnvironment, string, string, string];
  if (keyEnvironment !== environment) return undefined;
  if (checksumOf(token.slice(0, token.length - CHECKSUM_LENGTH)) !== checksum) return undefined;
  return { environment, publicId, secret };
}

/**
 * `length` characters of base62 from `randomBytes`, without bias: a byte is used only when it
 * is below 248 (4 x 62), so each of the 62 characters is equally likely.
 */
export function randomBase62(length: number, randomBytes: (size: number) => Buffer): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62_ALPHABET[byte % 62];
    }
  }
  return out;
}

const KEY_IN_TEXT = /(?<![0-9A-Za-z])sk_(live|test)_[0-9A-Za-z_]*/g;

/** `text` with anything shaped as a key cut to its prefix (`sk_test_[redacted]`): for log lines (a key sent in a URL). */
export function redactApiKeys(text: string): string {
  return text.includes('sk_') ? text.replace(KEY_IN_TEXT, 'sk_$1_[redacted]') : text;
}
