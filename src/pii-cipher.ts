import crypto from 'node:crypto';

/**
 * Personal data at rest (identity numbers, names, dates of birth, documents): AES-256-GCM with
 * a fresh 96-bit nonce per value, the key's id written in front of every ciphertext so keys can
 * rotate (new values are sealed under the current key; values sealed under a previous key still
 * open while that key is configured). A `context` (the table, column and row a value belongs
 * to) is bound as additional authenticated data: a ciphertext copied to another row or column
 * does not open there. Nothing here ever puts plaintext in an error message.
 */

export interface PiiKey {
  /** 1 to 32 characters of [A-Za-z0-9_-]. */
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

export interface PiiKeyring {
  current: PiiKey;
  /** Keys that only open what they sealed before a rotation. */
  previous: readonly PiiKey[];
}

export const PII_KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const ALGORITHM = 'aes-256-gcm';

/** A value that cannot be opened: an unknown key id, a wrong context or altered bytes. Says nothing of the value. */
export class PiiCipherError extends Error {
  override name = 'PiiCipherError';
}

export class PiiCipher {
  private readonly keys = new Map<string, Buffer>();
  private readonly current: PiiKey;

  constructor(keyring: PiiKeyring) {
    for (const key of [keyring.current, ...keyring.previous]) {
      if (!PII_KEY_ID.test(key.id)) throw new PiiCipherError(`PII key id "${key.id}" must be 1 to 32 characters of A-Z, a-z, 0-9, _ and -`);
      if (key.key.length !== 32) throw new PiiCipherError(`PII key "${key.id}" must be 32 bytes`);
      if (this.keys.has(key.id)) throw new PiiCipherError(`PII key id "${key.id}" is configured twice`);
      this.keys.set(key.id, key.key);
    }
    this.current = keyring.current;
  }

  /** The id of the key new values are sealed under. */
  get keyId(): string {
    return this.current.id;
  }

  /** `<key id>:<base64url(nonce | tag | ciphertext)>`. */
  sealText(plaintext: string, context: string): string {
    return `${this.current.id}:${this.seal(Buffer.from(plaintext, 'utf8'), context).toString('base64url')}`;
  }

  openText(sealed: string, context: string): string {
    const colon = sealed.indexOf(':');
    if (colon < 1) throw new PiiCipherError('not a sealed value (no key id)');
    return this.open(sealed.slice(0, colon), Buffer.from(sealed.slice(colon + 1), 'base64url'), context).toString('utf8');
  }

  /** `<key id length: 1 byte><key id><nonce><tag><ciphertext>`. */
  sealBytes(bytes: Buffer, context: string): Buffer {
    const id = Buffer.from(this.current.id, 'ascii');
    return Buffer.concat([Buffer.from([id.length]), id, this.seal(bytes, context)]);
  }

  openBytes(sealed: Buffer, context: string): Buffer {
    const length = sealed[0] ?? 0;
    if (length < 1 || sealed.length < 1 + length) throw new PiiCipherError('not a sealed value (no key id)');
    return this.open(sealed.subarray(1, 1 + length).toString('ascii'), sealed.subarray(1 + length), context);
  }

  /** The key id a sealed value names (to find what still needs re-sealing after a rotation). */
  static keyIdOf(sealed: string | Buffer): string {
    if (typeof sealed === 'string') return sealed.slice(0, Math.max(0, sealed.indexOf(':')));
    return sealed.subarray(1, 1 + (sealed[0] ?? 0)).toString('ascii');
  }

  private seal(plaintext: Buffer, context: string): Buffer {
    const nonce = crypto.randomBytes(NONCE_BYTES);
    const cipher = crypto.createCipheriv(ALGORITHM, this.current.key, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([nonce, cipher.getAuthTag(), body]);
  }

  private open(keyId: string, payload: Buffer, context: string): Buffer {
    const key = this.keys.get(keyId);
    if (!key) throw new PiiCipherError(`no PII key "${keyId.slice(0, 32)}" is configured (add it to PII_ENCRYPTION_PREVIOUS_KEYS)`);
    if (payload.length < NONCE_BYTES + TAG_BYTES) throw new PiiCipherError('sealed value too short');
    const decipher = crypto.createDecipheriv(ALGORITHM, key, payload.subarray(0, NONCE_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(payload.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(payload.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PiiCipherError(`a value sealed under key "${keyId}" does not open: altered, or sealed for another context`);
    }
  }
}

/**
 * One key as configured: `<id>:<key>` or `<key>`, the key 64 hex digits or the base64 of 32
 * bytes. Without an id, the id is `k` and the first 8 hex digits of the key's SHA-256 (so a
 * new key always gets a new id). Throws a message that names the variable, never the key.
 */
export function parsePiiKey(text: string, variable: string): PiiKey {
  const colon = text.indexOf(':');
  const id = colon === -1 ? undefined : text.slice(0, colon);
  const material = colon === -1 ? text : text.slice(colon + 1);
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(material)) key = Buffer.from(material, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(material)) key = Buffer.from(material, 'base64');
  if (!key || key.length !== 32) throw new PiiCipherError(`${variable} must be 32 bytes as 64 hex digits or base64, optionally preceded by "<key id>:"`);
  const keyId = id ?? `k${crypto.createHash('sha256').update(key).digest('hex').slice(0, 8)}`;
  if (!PII_KEY_ID.test(keyId)) throw new PiiCipherError(`${variable}: the key id must be 1 to 32 characters of A-Z, a-z, 0-9, _ and -`);
  return { id: keyId, key };
}

/** PII_ENCRYPTION_KEY and PII_ENCRYPTION_PREVIOUS_KEYS (`<id>:<key>,...`, ids required) as one keyring; ids never repeat. */
export function parsePiiKeyring(currentText: string, previousText: string | undefined): PiiKeyring {
  const current = parsePiiKey(currentText, 'PII_ENCRYPTION_KEY');
  const list = previousText?.trim() ?? '';
  const previous = list === '' ? [] : list.split(',').map((part) => {
    if (!part.includes(':')) throw new PiiCipherError('PII_ENCRYPTION_PREVIOUS_KEYS must list <key id>:<key> pairs separated by commas');
    return parsePiiKey(part.trim(), 'PII_ENCRYPTION_PREVIOUS_KEYS');
  });
  const ids = [current, ...previous].map((key) => key.id);
  if (new Set(ids).size !== ids.length) throw new PiiCipherError('PII_ENCRYPTION_PREVIOUS_KEYS repeats a key id (or the id of PII_ENCRYPTION_KEY)');
  return { current, previous };
}
